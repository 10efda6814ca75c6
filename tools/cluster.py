#!/usr/bin/env python3
"""Start Cyborg on a Galera cluster, a RabbitMQ cluster and HAProxy.

Everything runs on loopback from a temporary directory: 3 MariaDB Galera
nodes (Debian's galera-4 and mariadb-server) behind HAProxy (one writer,
two backups), 3 RabbitMQ nodes (quorum queues), Placement on Galera, two
cyborg-api processes behind HAProxy, three cyborg-conductor processes and
``--agents`` cyborg-agent processes with the fake driver. The machine's
own MariaDB and RabbitMQ are never touched. HAProxy is installed with
apt-get when it is missing.

It prints the endpoints and waits until interrupted (Ctrl-C or SIGTERM),
then stops and deletes everything. ``--check`` instead binds one
accelerator request through the HAProxy endpoint, prints what it found
and stops.

Usage: python tools/cluster.py [--agents 2] [--devices 2] [--dir DIR]
[--check]
"""

import argparse
import shutil
import signal
import sys
import tempfile
import time
import uuid

import requests

from cyborg.tests.cluster import stack as cluster_stack

PROFILE = {'name': 'cluster-check',
           'groups': [{'resources:FPGA': '1',
                       'trait:CUSTOM_FAKE_DEVICE': 'required'}]}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--agents', type=int, default=2,
                        help='compute hosts, one cyborg-agent process each')
    parser.add_argument('--devices', type=int, default=2,
                        help='fake devices per host')
    parser.add_argument('--dir', help='where the files and logs go (a new '
                        'temporary directory, removed at the end, when '
                        'not given; kept when given)')
    parser.add_argument('--check', action='store_true',
                        help='bind one accelerator request and stop')
    args = parser.parse_args(argv)
    if args.agents < 1 or args.devices < 1:
        parser.error('--agents and --devices must be at least 1')
    return args


def check(stack, http):
    """Create a profile and bind one ARQ of it to the first host; returns
    what the API says of it once it is resolved."""
    resp = http.post(stack.api_url + '/v2/device_profiles', json=PROFILE,
                     timeout=60)
    resp.raise_for_status()
    return bind_one(stack, http, stack.hosts[0])


def bind_one(stack, http, host):
    """Create an ARQ from PROFILE and bind it to a deployable of ``host``;
    returns what the API says of it once it is resolved."""
    resp = http.post(stack.api_url + '/v2/accelerator_requests',
                     json={'device_profile_name': PROFILE['name']},
                     timeout=60)
    resp.raise_for_status()
    arq = resp.json()['arqs'][0]
    deployable = next(d for d in stack.deployables()
                      if d['rp_uuid'] and d['name'].startswith(host))
    patch = {arq['uuid']: [
        {'path': '/hostname', 'op': 'add', 'value': host},
        {'path': '/device_rp_uuid', 'op': 'add',
         'value': deployable['rp_uuid']},
        {'path': '/instance_uuid', 'op': 'add', 'value': str(uuid.uuid4())},
    ]}
    resp = http.patch(stack.api_url + '/v2/accelerator_requests',
                      json=patch, timeout=60)
    resp.raise_for_status()
    url = stack.api_url + '/v2/accelerator_requests/' + arq['uuid']
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = http.get(url, timeout=60).json()
        if found['state'] in ('Bound', 'BindFailed'):
            return found
        time.sleep(0.2)
    raise RuntimeError('accelerator request %s was never resolved'
                       % arq['uuid'])


def run(args, workdir):
    hosts = ['cluster-%d' % i for i in range(1, args.agents + 1)]
    sections = {'fake_driver': {'device_count': args.devices}}
    start = time.monotonic()
    with cluster_stack.ClusterStack(workdir, hosts,
                                    sections=sections) as stack:
        stack.wait_inventory(args.devices)
        print('Started in %.0f s.' % (time.monotonic() - start))
        for name, value in stack.endpoints().items():
            print('%-22s %s' % (name + ':', value))
        sys.stdout.flush()
        if args.check:
            with requests.Session() as http:
                found = check(stack, http)
            print('Accelerator request %s: %s on %s; Galera writer %s; '
                  'queues led by %s' % (
                      found['uuid'], found['state'], found['hostname'],
                      stack.haproxy.writer().name,
                      sorted(set(stack.rabbit.queue_leaders().values()))))
            return 0 if found['state'] == 'Bound' else 1
        print('Running; Ctrl-C stops and removes everything.', flush=True)
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            signal.pause()
        except KeyboardInterrupt:
            print('Stopping.')
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    args = parse_args(argv)
    if args.dir:
        return run(args, args.dir)
    workdir = tempfile.mkdtemp(prefix='cyborg-cluster-')
    try:
        return run(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
