"""Cyborg on the clusters operators run: Galera, RabbitMQ and HAProxy.

One ``ClusterStack`` (3 Galera nodes and 2 cyborg-api processes behind
HAProxy, 3 RabbitMQ nodes with quorum queues, 3 conductors, 2 agents)
serves the tests of this module; each takes a part away as an operator's
bad day would and shows that binds still go through HAProxy's endpoint.
``tools/cluster.py --check`` runs once as a person would run it.
"""

import os
import signal
import subprocess
import sys
import time

import pytest
import requests

from cyborg.tests.cluster import stack as cluster_stack

pytestmark = pytest.mark.functional

TOOL = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                    'cluster.py')
sys.path.insert(0, os.path.dirname(TOOL))
import cluster as cluster_tool  # noqa: E402

HOSTS = ('cl-a', 'cl-b')
DEVICES = 2


@pytest.fixture(scope='module')
def stack(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('cluster'))
    sections = {'fake_driver': {'device_count': DEVICES,
                                'attach_type': 'MDEV'},
                'conductor': {'heartbeat_interval': 2}}
    with cluster_stack.ClusterStack(workdir, HOSTS,
                                    sections=sections) as found:
        found.wait_inventory(DEVICES)
        with requests.Session() as http:
            resp = http.post(found.api_url + '/v2/device_profiles',
                             json=cluster_tool.PROFILE, timeout=60)
            assert resp.status_code == 201, resp.text
        yield found


def _bind(stack):
    with requests.Session() as http:
        found = _retry(lambda: cluster_tool.bind_one(stack, http, HOSTS[1]))
    assert found['state'] == 'Bound', found
    return found


def _retry(call, seconds=60):
    """``call()`` until it passes: a fault's first seconds may fail a
    request, as they would an operator's; what counts is that it ends."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except (RuntimeError, requests.RequestException):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _rows_per_node(stack, table='accelerator_requests'):
    counts = []
    for node in stack.galera.nodes:
        conn = node.connect('cyborg')
        with conn.cursor() as cursor:
            cursor.execute('SELECT COUNT(*) FROM %s' % table)
            counts.append(cursor.fetchone()[0])
        conn.close()
    return counts


def test_check_command_binds_through_haproxy(tmp_path):
    proc = subprocess.run(
        [sys.executable, TOOL, '--check', '--agents', '1', '--devices', '1',
         '--dir', str(tmp_path)], capture_output=True, text=True,
        timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert 'Bound on cluster-1' in proc.stdout, proc.stdout
    assert 'Cyborg API (HAProxy):' in proc.stdout


def test_queues_are_quorum_and_rows_reach_every_node(stack):
    found = _bind(stack)
    leaders = stack.rabbit.queue_leaders()
    # NOTE(tests): the conductors' topic, each agent's and the reply
    # queues are all quorum queues, spread over the nodes.
    assert 'cyborg-conductor' in leaders, leaders
    assert any(name.startswith('reply_') for name in leaders), leaders
    assert stack.haproxy.writer() is stack.galera.nodes[0]
    counts = cluster_stack.wait_until(
        lambda: len(set(_rows_per_node(stack))) == 1, 30)
    assert counts is not None, _rows_per_node(stack)
    assert found['hostname'] == HOSTS[1]


def test_galera_writer_killed_and_rejoined(stack):
    writer = stack.haproxy.writer()
    writer.kill()
    moved = cluster_stack.wait_until(
        lambda: stack.haproxy.writer() not in (None, writer), 30)
    assert moved is not None, stack.haproxy.servers('galera')
    _bind(stack)
    stack.galera.rejoin(writer)
    assert stack.galera.size() == 3
    back = cluster_stack.wait_until(
        lambda: stack.haproxy.writer() is writer, 30)
    assert back is not None, stack.haproxy.servers('galera')
    _bind(stack)
    assert cluster_stack.wait_until(
        lambda: len(set(_rows_per_node(stack))) == 1, 30) is not None


def test_rabbitmq_leader_killed(stack):
    leader = stack.rabbit.leader()
    leader.kill()
    try:
        _bind(stack)
    finally:
        leader.start().wait_started()
    _bind(stack)


def test_api_process_killed(stack):
    victim = stack.apis[0]
    victim.proc.send_signal(signal.SIGKILL)
    victim.proc.wait()
    statuses = []
    with requests.Session() as http:
        for _ in range(20):
            statuses.append(http.get(stack.api_url + '/v2/devices',
                                     timeout=60).status_code)
    # NOTE(tests): HAProxy sends a request refused by the dead process
    # to the other one, so not one of them fails.
    assert set(statuses) == {200}, statuses
    victim.start()
    assert cluster_stack.wait_until(
        lambda: stack.haproxy.servers('cyborg_api')['api-1'] == 'UP',
        60) is not None


def test_whole_database_down_and_back(stack):
    stack.galera.stop_all()
    with requests.Session() as http:
        resp = http.get(stack.api_url + '/v2/accelerator_requests',
                        timeout=60)
    assert resp.status_code == 503, resp.text
    assert resp.json()['error_message'], resp.text
    stack.galera.start_all()
    _bind(stack)


def test_galera_nodes_agree(stack):
    """Last: whatever the faults did, the three nodes hold the same rows
    and no write was left half-done."""
    for table in ('accelerator_requests', 'attach_handles', 'deployables'):
        counts = _rows_per_node(stack, table)
        assert len(set(counts)) == 1, (table, counts)
    conn = stack.galera.nodes[0].connect('cyborg')
    with conn.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM accelerator_requests "
                       "WHERE state NOT IN ('Bound')")
        assert cursor.fetchone()[0] == 0
    conn.close()
