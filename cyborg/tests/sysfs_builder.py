"""Builds sysfs trees laid out like the kernel's, for tests and fixtures.

The layout follows Linux: real device directories under
``devices/pci<domain>:<bus>/``, ``bus/pci/devices/<addr>`` symlinks to them,
``driver`` links into ``bus/pci/drivers``, ``iommu_group`` links into
``kernel/iommu_groups``, SR-IOV ``physfn``/``virtfn<N>`` links,
``mdev_supported_types`` with ``class/mdev_bus`` links, ``class/fpga``
links into the FPGA's device directory, and ``module/<name>`` for loaded
kernel modules. Every link is relative, so a tree can be copied or
committed and still resolves.
"""

import os
import struct

# NOTE(sysfs_builder): the command (memory and bus master on, INTx off)
# and status (capability list) words of a working endpoint, so the header
# reads like a real card's rather than all zeros.
_COMMAND, _STATUS = 0x0406, 0x0010
# What the SR-IOV spec has a VF's own vendor and device ids read.
_ALL_ONES = '0xffff'


def write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as out:
        out.write('%s\n' % value)


def link(target, link):
    """Create ``link`` pointing at ``target`` with a relative path."""
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.relpath(target, os.path.dirname(link)), link)


def _config_space(vendor, device, class_code, revision='0x00'):
    """The 64-byte standard header an unprivileged reader sees.

    Little-endian like the kernel's ``config`` file: vendor and device
    ids, command and status, revision, then the 3-byte class code.
    """
    header = bytearray(64)
    struct.pack_into('<HHHHB', header, 0, int(vendor, 16), int(device, 16),
                     _COMMAND, _STATUS, int(revision, 16))
    header[9:12] = int(class_code, 16).to_bytes(3, 'little')
    return bytes(header)


def _write_config(ddir, *args):
    with open(os.path.join(ddir, 'config'), 'wb') as out:
        out.write(_config_space(*args))


class SysfsBuilder:
    """Writes devices into a sysfs tree rooted at ``root``."""

    def __init__(self, root):
        self.root = str(root)

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def device_dir(self, address):
        domain, bus = address.split(':')[:2]
        return self.path('devices', 'pci%s:%s' % (domain, bus), address)

    def pci(self, address, vendor, device, class_code, *,
            subsystem_vendor=None, subsystem_device=None, revision='0x00',
            numa_node=0, driver=None, iommu_group=None, totalvfs=None,
            numvfs=None, extra_files=None):
        """A PCI function; ids like '0x10de', class like '0x030200'."""
        ddir = self.device_dir(address)
        os.makedirs(ddir, exist_ok=True)
        _write_config(ddir, vendor, device, class_code, revision)
        files = {
            'vendor': vendor, 'device': device, 'class': class_code,
            'subsystem_vendor': subsystem_vendor or vendor,
            'subsystem_device': subsystem_device or device,
            'revision': revision, 'numa_node': numa_node,
            'uevent': 'PCI_SLOT_NAME=%s' % address,
            'enable': 1,
        }
        if totalvfs is not None:
            files['sriov_totalvfs'] = totalvfs
            files['sriov_numvfs'] = numvfs or 0
        files.update(extra_files or {})
        for name, value in files.items():
            write(os.path.join(ddir, name), value)
        link(ddir, self.path('bus', 'pci', 'devices', address))
        if driver:
            drv = self.path('bus', 'pci', 'drivers', driver)
            os.makedirs(drv, exist_ok=True)
            link(drv, os.path.join(ddir, 'driver'))
            link(ddir, os.path.join(drv, address))
        if iommu_group is not None:
            group = self.path('kernel', 'iommu_groups', str(iommu_group))
            os.makedirs(os.path.join(group, 'devices'), exist_ok=True)
            link(group, os.path.join(ddir, 'iommu_group'))
            link(ddir, os.path.join(group, 'devices', address))
        return ddir

    def vfs(self, pf_address, vf_addresses, vendor, device, class_code, *,
            driver=None, first_iommu_group=None, numa_node=0):
        """SR-IOV VFs of a PF: physfn and virtfn links, sriov_numvfs.

        Only the VFs' sysfs ``vendor`` and ``device`` files carry their
        ids: their config spaces read all ones there.
        """
        pf_dir = self.device_dir(pf_address)
        for index, vf_address in enumerate(vf_addresses):
            group = (None if first_iommu_group is None
                     else first_iommu_group + index)
            vf_dir = self.pci(vf_address, vendor, device, class_code,
                              driver=driver, iommu_group=group,
                              numa_node=numa_node)
            _write_config(vf_dir, _ALL_ONES, _ALL_ONES, class_code)
            link(pf_dir, os.path.join(vf_dir, 'physfn'))
            link(vf_dir, os.path.join(pf_dir, 'virtfn%d' % index))
        write(os.path.join(pf_dir, 'sriov_numvfs'), len(vf_addresses))

    def mdev_type(self, address, type_id, name, available_instances, *,
                  device_api='vfio-pci', description='', created=0):
        """A mediated device type (vGPU) offered by a parent function."""
        ddir = self.device_dir(address)
        tdir = os.path.join(ddir, 'mdev_supported_types', type_id)
        write(os.path.join(tdir, 'name'), name)
        write(os.path.join(tdir, 'available_instances'),
               available_instances)
        write(os.path.join(tdir, 'device_api'), device_api)
        write(os.path.join(tdir, 'description'), description)
        # NOTE(fixtures): write-only in the kernel; a test reads what the
        # agent wrote to create an mdev.
        write(os.path.join(tdir, 'create'), '')
        os.makedirs(os.path.join(tdir, 'devices'), exist_ok=True)
        for index in range(created):
            mdev = os.path.join(ddir, 'mdev-%08d-0000-0000-0000-%012d'
                                % (index, index))
            os.makedirs(mdev, exist_ok=True)
            write(os.path.join(mdev, 'remove'), '')
            link(mdev, os.path.join(tdir, 'devices', os.path.basename(mdev)))
        link(ddir, self.path('class', 'mdev_bus', address))

    def intel_fpga(self, address, dev_index=0, afu_id=None,
                   interface_id=None):
        """The intel-fpga-dev class entry of a PAC card, with FME and port.
        """
        ddir = self.device_dir(address)
        name = 'intel-fpga-dev.%d' % dev_index
        fdir = os.path.join(ddir, 'fpga', name)
        if interface_id is not None:
            write(os.path.join(fdir, 'intel-fpga-fme.%d' % dev_index, 'pr',
                                'interface_id'), interface_id)
        if afu_id is not None:
            write(os.path.join(fdir, 'intel-fpga-port.%d' % dev_index,
                                'afu_id'), afu_id)
        os.makedirs(fdir, exist_ok=True)
        link(fdir, self.path('class', 'fpga', name))
        return fdir

    def qat(self, address, cfg_services, state='up'):
        """The qat/ directory newer kernels expose on a QAT PF."""
        ddir = self.device_dir(address)
        write(os.path.join(ddir, 'qat', 'cfg_services'), cfg_services)
        write(os.path.join(ddir, 'qat', 'state'), state)

    def module(self, name, refcnt=0):
        """A loaded kernel module: ``module/<name>`` as the kernel shows it.

        Only its existence says the module is loaded; the files are there
        because git keeps no empty directories.
        """
        mdir = self.path('module', name)
        write(os.path.join(mdir, 'initstate'), 'live')
        write(os.path.join(mdir, 'refcnt'), refcnt)
        return mdir
