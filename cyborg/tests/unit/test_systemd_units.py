"""The systemd units of tools/systemd start commands that exist."""

import ast
import configparser
import importlib.util
import pathlib
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
UNITS_DIR = ROOT / 'tools' / 'systemd'
CONFIG_FILE = '/etc/cyborg/cyborg.conf'
#: Units that run one of Cyborg's console scripts, and the script.
SCRIPT_UNITS = {
    'cyborg-api.service': 'cyborg-api',
    'cyborg-conductor.service': 'cyborg-conductor',
    'cyborg-agent.service': 'cyborg-agent',
}
UWSGI_UNIT = 'cyborg-api-uwsgi.service'
WSGI_MODULE = 'cyborg.wsgi.api'


def _parser():
    # NOTE(systemd): unit files may repeat a key (Environment=, After=...),
    # which configparser refuses unless it is not strict; '$' and '%' are
    # systemd's, not interpolation; keys keep their case.
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    return parser


def _read(path):
    parser = _parser()
    with open(path, encoding='utf-8') as handle:
        parser.read_file(handle)
    return parser


def _console_scripts():
    setup = _read(ROOT / 'setup.cfg')
    scripts = {}
    for line in setup['entry_points']['console_scripts'].splitlines():
        if line.strip():
            name, target = (part.strip() for part in line.split('=', 1))
            scripts[name] = target
    return scripts


def _exec_start(unit):
    return shlex.split(_read(UNITS_DIR / unit)['Service']['ExecStart'])


def _module_source(module):
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, '%s is not importable' % module
    return pathlib.Path(spec.origin).read_text(encoding='utf-8')


def test_every_unit_is_checked():
    found = {path.name for path in UNITS_DIR.glob('*.service')}
    assert found == set(SCRIPT_UNITS) | {UWSGI_UNIT}


@pytest.mark.parametrize('unit', sorted(SCRIPT_UNITS))
def test_unit_runs_its_console_script_with_the_config_file(unit):
    argv = _exec_start(unit)
    program = pathlib.PurePosixPath(argv[0])
    assert program.is_absolute()
    scripts = _console_scripts()
    assert program.name == SCRIPT_UNITS[unit]
    assert program.name in scripts
    # The entry point's module exists, so the script does too once
    # installed.
    module = scripts[program.name].split(':')[0]
    assert importlib.util.find_spec(module) is not None
    assert argv[1:] == ['--config-file', CONFIG_FILE]


@pytest.mark.parametrize('unit', sorted(SCRIPT_UNITS))
def test_cyborg_commands_notify_systemd_when_ready(unit):
    # NOTE(systemd): cyborg.service.run does not fork and sends READY=1 to
    # NOTIFY_SOCKET once every service started, from the main process
    # (functional/test_service_signals.py checks it on a real process).
    service = _read(UNITS_DIR / unit)['Service']
    assert service['Type'] == 'notify'
    assert service['NotifyAccess'] == 'main'
    assert 'systemd.notify_once()' in _module_source('cyborg.service')


@pytest.mark.parametrize('unit', sorted(SCRIPT_UNITS) + [UWSGI_UNIT])
def test_unit_service_settings(unit):
    parsed = _read(UNITS_DIR / unit)
    service = parsed['Service']
    assert service['User'] == 'cyborg'
    assert service['Restart'] == 'on-failure'
    assert service['KillMode'] == 'mixed'
    # SIGHUP re-reads the mutable options (cyborg.service.run), or makes
    # the uWSGI master reload its workers.
    assert service['ExecReload'] == '/bin/kill -HUP $MAINPID'
    assert parsed['Install']['WantedBy'] == 'multi-user.target'


def test_agent_can_use_sudo_for_privsep():
    # NOTE(systemd): the agent starts its privsep daemon through sudo,
    # which NoNewPrivileges would stop.
    service = _read(UNITS_DIR / 'cyborg-agent.service')['Service']
    assert service.get('NoNewPrivileges', 'false') in ('false', 'no')


def test_uwsgi_unit_loads_the_wsgi_application():
    argv = _exec_start(UWSGI_UNIT)
    assert pathlib.PurePosixPath(argv[0]).name == 'uwsgi'
    assert argv[1] == '--ini'
    ini_path = pathlib.PurePosixPath(argv[2])
    assert str(ini_path.parent) == '/etc/cyborg'
    ini = _read(UNITS_DIR / ini_path.name)['uwsgi']

    module, _, attribute = ini['module'].partition(':')
    assert module == WSGI_MODULE
    # NOTE(systemd): importing the module would build the application
    # (and read the configuration), so its source is read instead.
    tree = ast.parse(_module_source(module))
    assigned = {target.id: node.value for node in tree.body
                if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    assert attribute in assigned
    env_var = ast.literal_eval(assigned['CONFIG_FILE_ENV'])
    assert ini['env'] == '%s=%s' % (env_var, CONFIG_FILE)
    assert ini['lazy-apps'] == 'true'
    assert ini['need-app'] == 'true'
    assert _read(UNITS_DIR / UWSGI_UNIT)['Service']['Type'] == 'notify'
