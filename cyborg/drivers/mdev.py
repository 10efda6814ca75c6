"""Mediated devices (vGPU instances): created at bind, removed at unbind."""

import os

from oslo_log import log as logging

from cyborg import exception
from cyborg.drivers import sysfs as sysfs_mod
from cyborg.privsep import sysfs as privsep_sysfs

LOG = logging.getLogger(__name__)

ATTACH_MDEV = 'MDEV'


def _parent(sysfs, info):
    address = '%s:%s:%s.%s' % (info['domain'], info['bus'], info['device'],
                               info['function'])
    return sysfs.path('bus', 'pci', 'devices', address)


def create(driver, info, mdev_uuid, sysfs=None):
    """Create mdev ``mdev_uuid`` of type ``info['asked_type']`` on the PCI
    function ``info`` names; nothing to do when it already exists."""
    sysfs = sysfs or sysfs_mod.Sysfs()
    parent = _parent(sysfs, info)
    if os.path.isdir(os.path.join(parent, mdev_uuid)):
        return
    create_file = os.path.join(parent, 'mdev_supported_types',
                               info.get('asked_type', ''), 'create')
    if not os.path.isfile(create_file):
        raise exception.DriverError(
            driver=driver, reason='%s offers no mdev type %s' %
            (os.path.basename(parent), info.get('asked_type')))
    try:
        privsep_sysfs.write(sysfs.root, create_file, mdev_uuid)
    except OSError as exc:
        raise exception.DriverError(
            driver=driver, reason='cannot create mdev %s: %s' %
            (mdev_uuid, exc.strerror or exc)) from exc
    LOG.info('Created mdev %s (%s) on %s', mdev_uuid, info['asked_type'],
             os.path.basename(parent))


def remove(driver, info, mdev_uuid, sysfs=None):
    """Remove mdev ``mdev_uuid``; one already gone is not an error."""
    sysfs = sysfs or sysfs_mod.Sysfs()
    remove_file = os.path.join(_parent(sysfs, info), mdev_uuid, 'remove')
    if not os.path.isfile(remove_file):
        LOG.info('mdev %s is already gone', mdev_uuid)
        return
    try:
        privsep_sysfs.write(sysfs.root, remove_file, '1')
    except OSError as exc:
        raise exception.DriverError(
            driver=driver, reason='cannot remove mdev %s: %s' %
            (mdev_uuid, exc.strerror or exc)) from exc
    LOG.info('Removed mdev %s', mdev_uuid)


def held(fn: sysfs_mod.PciFunction) -> list[str]:
    """The mediated devices that exist on the PCI function ``fn``: the
    entries of its ``mdev_supported_types/*/devices/``, sorted."""
    types = fn.subdir('mdev_supported_types')
    found = []
    for type_id in sysfs_mod.listdir(types):
        found += sysfs_mod.listdir(os.path.join(types, type_id, 'devices'))
    return sorted(found)
