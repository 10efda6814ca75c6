"""Fixtures every test may use: configuration, an SQLite database, contexts.
"""

from oslo_config import cfg
import pytest

from cyborg import conf as cyborg_conf  # noqa: F401 (registers options)
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg import rpc

CONF = cfg.CONF


@pytest.fixture(scope='session', autouse=True)
def _config(tmp_path_factory):
    """Parse an empty command line once; state goes to a temporary dir."""
    CONF([], project='cyborg', default_config_files=[])
    rpc.register_opts(CONF)
    CONF.set_override('state_path', str(tmp_path_factory.mktemp('state')))
    objects.register_all()
    yield
    CONF.reset()


@pytest.fixture(scope='session')
def _db_engine(tmp_path_factory, _config):
    # NOTE(tests): enginefacade is process-wide and starts once, so the whole
    # session shares one SQLite file and each test empties the tables.
    from cyborg.conductor import manager
    from cyborg.db import migration
    from cyborg.db import session

    path = tmp_path_factory.mktemp('db') / 'cyborg.sqlite'
    CONF.set_override('connection', 'sqlite:///%s' % path, group='database')
    manager.bind_objects_to_database()
    engine = session.get_engine()
    migration.upgrade('head', engine=engine)
    return engine


@pytest.fixture
def db(_db_engine):
    """An empty database bound to the objects, as in the conductor."""
    from cyborg.conductor import manager
    from cyborg.db import models

    manager.bind_objects_to_database()
    yield _db_engine
    with _db_engine.begin() as conn:
        for table in reversed(models.Base.metadata.sorted_tables):
            conn.execute(table.delete())


@pytest.fixture
def ctx():
    """An admin request context."""
    return cyborg_context.get_admin_context()


@pytest.fixture
def override():
    """Set configuration options for one test: override(name, value, group).
    """
    touched = []

    def _set(name, value, group=None):
        CONF.set_override(name, value, group=group)
        touched.append((name, group))

    yield _set
    for name, group in touched:
        CONF.clear_override(name, group=group)


@pytest.fixture(scope='session')
def _placement_server(tmp_path_factory, _config):
    # NOTE(tests): Placement configures its database once per process, so
    # the session shares one server; each test wipes what it created.
    from cyborg.tests import placement

    path = tmp_path_factory.mktemp('placement') / 'placement.sqlite'
    server = placement.PlacementServer('sqlite:///%s' % path).start()
    yield server
    server.stop()


@pytest.fixture
def placement(_placement_server):
    """A real Placement (openstack-placement on SQLite), empty per test."""
    yield _placement_server
    _placement_server.faults.status = None
    _placement_server.wipe()


@pytest.fixture(scope='session', params=['oldest', 'newest'])
def pynvml_source(request):
    """nvidia-ml-py's pynvml.py, in the oldest version setup.cfg accepts
    (installed into a cache on first use) and the newest."""
    from cyborg.tests.fixtures import pynvml_versions

    return getattr(pynvml_versions, request.param)()


@pytest.fixture
def real_pynvml(pynvml_source):
    """A fresh pynvml module of each version; no C library loaded yet."""
    from cyborg.tests.fixtures import pynvml_versions

    return pynvml_versions.load(pynvml_source)


@pytest.fixture
def libnvml(real_pynvml):
    """A fake libnvidia-ml under the real pynvml, which ``import pynvml``
    gives while the test runs: add GPUs with ``libnvml.gpu(address)``."""
    from cyborg.tests.fixtures import fake_libnvml

    with fake_libnvml.installed(real_pynvml) as lib:
        with fake_libnvml.imported(real_pynvml):
            yield lib
