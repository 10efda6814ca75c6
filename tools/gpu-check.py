#!/usr/bin/env python3
"""Runs the agent's GPU discovery, health checks and metrics on this host.

Usage: tools/gpu-check.py [--sysfs-root /sys] [--host NAME] [--json FILE]
       [--no-nvml] [--capture DIR]

On a host with NVIDIA GPUs it runs, over the real sysfs tree (or the one
``--sysfs-root`` names), what cyborg-agent runs for them on every report
interval:

* the NVIDIA driver's discovery, through the agent's resource tracker
  (the same code path, the partition modes and the health fields
  included);
* the health checks of each GPU: the PCI card checks and NVML's (ECC,
  retired pages, remapped rows), NVML's registration of the GPU for
  critical Xid events and a drain of its event set;
* a metrics sample of each GPU (sysfs and NVML series).

It prints one table per GPU: what sysfs says of the function, what NVML
calls it (model, driver version), the device and deployables Cyborg
reports, its health and the checks that ran, whether Xid events are
watched, and the metrics. NVIDIA display functions the driver does not
report are listed with the reason. ``--json`` also writes everything as
JSON; ``--capture`` copies the GPUs' sysfs entries with
tools/capture-sysfs.py, to be turned into a fixture.

Exits 0 when every GPU was discovered and none is failed; 1 when a GPU
is failed or the driver's discovery raised; 2 when there is no GPU.
"""

import argparse
import importlib.util
import json
import os
import platform
import socket
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
if REPO not in sys.path:
    # NOTE(tools): runs from a checkout without installing Cyborg, as on a
    # GPU host that has only the dependencies.
    sys.path.insert(0, REPO)

from oslo_config import cfg  # noqa: E402

import cyborg  # noqa: E402,F401 (selects the threading backend)
from cyborg import conf as cyborg_conf  # noqa: E402,F401 (registers options)
from cyborg.agent import resource_tracker  # noqa: E402
from cyborg.drivers import base  # noqa: E402
from cyborg.drivers import nvidia_gpu  # noqa: E402
from cyborg.drivers import nvml  # noqa: E402
from cyborg.drivers import nvml_xid  # noqa: E402
from cyborg.drivers import sysfs  # noqa: E402
from cyborg.drivers import tools  # noqa: E402

CONF = cfg.CONF
ENTRY_POINT = 'nvidia_gpu_driver'


def _function_facts(fs, address):
    """What sysfs says of one PCI function, as the driver reads it."""
    fn = fs.pci_function(address)
    if fn is None:
        return {}
    link = {name: fn.read(name) for name in (
        'current_link_width', 'max_link_width', 'current_link_speed',
        'max_link_speed')}
    facts = {
        'pci_ids': '%s:%s subsystem %s:%s' % (
            fn.vendor_id, fn.device_id, fn.subsystem_vendor_id or '?',
            fn.subsystem_device_id or '?'),
        'class': fn.class_id,
        'kernel_driver': fn.driver or '(none)',
        'numa_node': fn.numa_node,
        'iommu_group': fn.iommu_group,
        'sriov': '%s of %s VFs' % (fn.sriov_numvfs, fn.sriov_totalvfs)
        if fn.sriov_totalvfs else 'no',
        'mdev_types': ' '.join(sorted(fn.mdev_types())) or '(none)',
    }
    if None not in link.values():
        facts['link'] = 'x%s of x%s, %s of %s' % (
            link['current_link_width'], link['max_link_width'],
            link['current_link_speed'], link['max_link_speed'])
    # NOTE(tools): ids and numbers as text, so that the JSON is plain.
    return {key: str(value) for key, value in facts.items()}


def _deployables(device):
    return ['%s: %s x%d (%s)' % (
        dep.name, dep.resource_class, dep.num_accelerators,
        ', '.join(sorted({h.attach_type for h in dep.attach_handles})))
        for dep in device.deployables]


def _watch_state(address):
    return {True: 'registered for critical Xid events',
            False: 'not deliverable for this GPU',
            None: 'not registered (no NVML handle)'}[
                nvml_xid.watching(address)]


def check(host):
    """{'host': ..., 'gpus': [...], 'skipped': [...], 'errors': [...]}."""
    tracker = resource_tracker.ResourceTracker(host, driver_names=[])
    driver = nvidia_gpu.NvidiaGpuDriver()
    tracker.enable(ENTRY_POINT, driver)
    host_report, failed = tracker.discover()
    fs = sysfs.Sysfs()
    result = {'host': host, 'kernel': platform.release(),
              'sysfs_root': CONF.agent.sysfs_root or '/sys',
              'nvml_loaded': nvml.library() is not None,
              'gpus': [], 'skipped': [], 'errors': list(failed)}
    reported = set()
    for device in host_report.devices:
        address = tools.control_address(device)
        reported.add(address)
        facts = _function_facts(fs, address)
        facts.update({
            'address': address,
            'nvml': nvml.identity(address),
            'device_type': device.type,
            'model': device.model,
            'modes': ' '.join(device.modes) or '(none)',
            'mode': device.mode or '(none)',
            'services': ' '.join(device.services) or '(none)',
            'deployables': _deployables(device) or ['(none)'],
            'offer_reason': device.offer_reason or '-',
            'health': device.health,
            'health_reason': device.health_reason or '-',
            'health_sources': ' '.join(device.health_sources) or '(none)',
            'xid_events': _watch_state(address),
            'metrics': driver.metrics(device),
            'warnings': list(device.warnings),
        })
        result['gpus'].append(facts)
    for fn in fs.pci_functions:
        if fn.vendor_id != nvidia_gpu.VENDOR_ID or \
                str(fn.address) in reported:
            continue
        if nvidia_gpu.is_gpu(fn):
            why = 'an SR-IOV VF, reported through its PF'
        else:
            why = 'class %s is no GPU (audio, USB, bridge...)' % fn.class_id
        result['skipped'].append({'address': str(fn.address), 'why': why})
    return result


def _rows(gpu):
    nvml_facts = gpu['nvml']
    yield 'model (NVML)', nvml_facts.get('name', '(no NVML handle)')
    for key in ('uuid', 'serial', 'vbios'):
        if key in nvml_facts:
            yield key, nvml_facts[key]
    if 'driver' in nvml_facts:
        yield 'driver / NVML', '%s / %s' % (nvml_facts['driver'],
                                           nvml_facts.get('nvml', '?'))
    if 'cuda_driver' in nvml_facts:
        version = int(nvml_facts['cuda_driver'])
        yield 'CUDA driver API', '%d.%d' % (version // 1000,
                                            version % 1000 // 10)
    if 'pynvml' in nvml_facts:
        yield 'nvidia-ml-py', nvml_facts['pynvml']
    for key in ('pci_ids', 'class', 'kernel_driver', 'numa_node',
                'iommu_group', 'link', 'sriov', 'mdev_types', 'device_type',
                'model', 'modes', 'mode', 'services'):
        if key in gpu:
            yield key.replace('_', ' '), gpu[key]
    for n, line in enumerate(gpu['deployables']):
        yield 'deployables' if n == 0 else '', line
    yield 'offer reason', gpu['offer_reason']
    yield 'health', '%s (checks: %s)' % (gpu['health'],
                                         gpu['health_sources'])
    yield 'health reason', gpu['health_reason']
    yield 'Xid events', gpu['xid_events']
    for n, (name, value) in enumerate(sorted(gpu['metrics'].items())):
        yield 'metrics' if n == 0 else '', '%s = %g' % (name, value)
    for n, warning in enumerate(gpu['warnings']):
        yield 'warnings' if n == 0 else '', warning


def render(result):
    lines = ['Cyborg GPU check on %s (kernel %s, sysfs %s, NVML %s)' % (
        result['host'], result['kernel'], result['sysfs_root'],
        'loaded' if result['nvml_loaded'] else 'not loaded')]
    for gpu in result['gpus']:
        rows = list(_rows(gpu))
        width = max(len(key) for key, _value in rows)
        lines += ['', 'GPU %s' % gpu['address'], '-' * (width + 40)]
        lines += ['%-*s  %s' % (width, key, value) for key, value in rows]
    if result['skipped']:
        lines += ['', 'NVIDIA functions not reported:']
        lines += ['  %s: %s' % (item['address'], item['why'])
                  for item in result['skipped']]
    if result['errors']:
        lines += ['', 'Discovery raised in: %s' % ', '.join(result['errors'])]
    if not result['gpus']:
        lines += ['', 'No NVIDIA GPU found under %s' % result['sysfs_root']]
    return '\n'.join(lines)


def _capture(sysfs_root, output, addresses):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        'capture-sysfs.py')
    spec = importlib.util.spec_from_file_location('capture_sysfs', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(['--sysfs-root', sysfs_root, output, *addresses])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sysfs-root', default='/sys')
    parser.add_argument('--host', default=socket.gethostname())
    parser.add_argument('--json', help='also write the results here')
    parser.add_argument('--no-nvml', action='store_true',
                        help='judge by sysfs only, as without nvidia-ml-py')
    parser.add_argument('--capture', metavar='DIR',
                        help='copy the GPUs\' sysfs entries here with '
                             'tools/capture-sysfs.py')
    args = parser.parse_args(argv)
    CONF([], project='cyborg', default_config_files=[])
    root = os.path.abspath(args.sysfs_root)
    CONF.set_override('sysfs_root', root, group='agent')
    CONF.set_override('use_nvml', not args.no_nvml, group='health')
    try:
        result = check(args.host)
    finally:
        nvml.forget()
    print(render(result))
    if args.json:
        with open(args.json, 'w') as handle:
            json.dump(result, handle, indent=2, sort_keys=True)
    if args.capture and result['gpus']:
        _capture(root, args.capture, [gpu['address']
                                      for gpu in result['gpus']])
    return exit_code(result)


def exit_code(result):
    """2 without a GPU, 1 when one failed or discovery raised, else 0."""
    if not result['gpus']:
        return 2
    if result['errors'] or any(gpu['health'] == base.FAILED
                               for gpu in result['gpus']):
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
