"""Fixtures of the unit tests: conductor and agents over the fake transport.
"""

import sys

from futurist import _thread as futurist_thread
import pytest

from cyborg import rpc
from cyborg import service
from cyborg.agent import manager as agent_manager
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import manager as conductor_manager
from cyborg.drivers import nvml
from cyborg.drivers import sysfs
from cyborg.tests import placement as placement_helpers


@pytest.fixture(autouse=True, scope='session')
def _rpc_servers_stop_at_once():
    """An RPC server's stop does not wait a second per worker thread.

    NOTE(tests): oslo.messaging's threading executor is futurist's thread
    pool, whose idle workers look for the pool's shutdown only once a
    second; each test stops a conductor and its agents, and waited for
    that twice or more (several minutes over the suite). A service stops
    so only at exit, where the second does not matter.
    """
    worker = futurist_thread.ThreadWorker
    before = worker.MAX_IDLE_FOR
    worker.MAX_IDLE_FOR = 0.02
    yield
    worker.MAX_IDLE_FOR = before


@pytest.fixture(autouse=True)
def _no_host_nvml(monkeypatch):
    """No unit test reaches the NVML of the host it runs on.

    NOTE(tests): test-requirements.txt installs nvidia-ml-py; on a host
    with an NVIDIA driver its pynvml would initialise, and the GPUs of
    the sysfs fixtures share bus ids with real ones. Tests that want a
    pynvml put theirs in sys.modules (fake_libnvml.imported, test_nvml's
    stand-in); None there makes ``import pynvml`` fail.
    """
    monkeypatch.setitem(sys.modules, 'pynvml', None)
    nvml.forget()
    yield
    nvml.forget()


@pytest.fixture(autouse=True)
def _sysfs_defects_logged_afresh():
    """Each test sees the log lines of the sysfs defects it meets.

    NOTE(tests): the agent logs a damaged file once per process; tests
    reuse the same relative paths under different roots.
    """
    sysfs.forget_logged()
    yield


@pytest.fixture
def fake_rpc(override):
    """oslo.messaging on its in-process fake transport, for one test."""
    override('transport_url', 'fake:/')
    rpc.cleanup()
    rpc.init(rpc.CONF)
    yield
    rpc.cleanup()


@pytest.fixture
def stack(db, override, tmp_path):
    """A running conductor; call the fixture's value to start an agent.

    The agent's periodic report is off unless asked for: tests run passes
    themselves with ``agent.report()``.
    """
    override('transport_url', 'fake:/')
    override('state_path', str(tmp_path))
    override('report_interval', 3600, group='agent')
    # NOTE(tests): agents here report and heartbeat one at a time; waiting
    # for others to batch with would only slow the tests down.
    override('heartbeat_batch_delay', 0, group='conductor')
    override('report_batch_delay', 0, group='conductor')
    rpc.cleanup()
    manager = conductor_manager.ConductorManager('ctl')
    # NOTE(tests): init_host records the conductor; its periodic takeover
    # scans would run, at any moment, into the statements a test counts.
    # Tests drive takeover themselves (conductor/test_takeover.py).
    manager.periodic_tasks = list
    conductor = service.RPCService(manager, 'cyborg-conductor', 'ctl',
                                   conductor_manager.BINARY)
    conductor.start()
    agents = []

    def start_agent(host='node1', periodic=False, placement=None):
        """Start an agent; with ``placement`` (the fixture's server) it
        writes its providers there, under a compute node provider made for
        it as Nova's compute service would."""
        tree = None
        if placement is not None:
            placement.compute_node(host)
            tree = placement_helpers.provider_tree(placement, host, tmp_path)
        agent = agent_manager.AgentManager(host, placement=tree)
        if not periodic:
            agent.periodic_tasks = list
        svc = service.RPCService(agent, agent_rpcapi.TOPIC, host,
                                 agent_manager.BINARY)
        svc.start()
        agents.append(svc)
        return agent

    yield start_agent
    # NOTE(tests): the conductor first: work it still runs (a scrub after
    # the test's last unbind) may call an agent, which must still answer,
    # or the conductor's stop waits for the call's timeout.
    conductor.stop()
    for svc in agents:
        svc.stop()
    rpc.cleanup()
