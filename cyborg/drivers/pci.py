"""Report objects built from PCI functions, shared by the PCI drivers.

One place for the names, traits, handles and board info every driver
derives from a ``sysfs.PciFunction``, so drivers only decide *which*
functions they claim and how they group them.
"""

import re

from cyborg.drivers import report

ATTACH_PCI = 'PCI'
CONTROLPATH_PCI = 'PCI'
OWNER_TRAIT = 'OWNER_CYBORG'

# PCI base class / subclass (first four hex digits of the class code) to
# Cyborg device type; the first match wins, then the base class alone.
_CLASS_TYPES = (
    ('0302', 'GPU'), ('0300', 'GPU'), ('03', 'GPU'),
    ('1200', 'AICHIP'), ('12', 'FPGA'),
    ('1080', 'QAT'), ('10', 'QAT'),
    ('0b40', 'FPGA'),
    ('02', 'NIC'),
    ('0108', 'NVME'), ('01', 'SSD'),
)

# Vendors the traits name rather than number.
VENDOR_NAMES = {
    '10de': 'NVIDIA', '8086': 'INTEL', '10ee': 'XILINX', '19e5': 'HUAWEI',
    '1bd4': 'INSPUR', '1002': 'AMD', '15b3': 'MELLANOX', '1924': 'SOLARFLARE',
    '1af4': 'VIRTIO', '1d0f': 'AMAZON', '1ded': 'ALIBABA',
}

_UNSAFE = re.compile(r'[^A-Z0-9_]')


def device_type(class_code):
    """Cyborg's device type for a PCI class code such as '030200'."""
    for prefix, kind in _CLASS_TYPES:
        if class_code.startswith(prefix):
            return kind
    return 'PCI'


def trait(*parts):
    """A valid custom trait from parts: CUSTOM_ + upper-case, '_'-joined."""
    name = '_'.join(str(p) for p in parts if p not in (None, ''))
    return 'CUSTOM_' + _UNSAFE.sub('_', name.upper())


def vendor_name(vendor_id):
    return VENDOR_NAMES.get(vendor_id, vendor_id.upper())


def deployable_name(host, fn, suffix=None):
    """Globally unique and stable: the host plus the PCI address."""
    name = '%s_%s' % (host, fn.address)
    return '%s_%s' % (name, suffix) if suffix else name


def controlpath(fn):
    return report.ControlPath(cpid_type=CONTROLPATH_PCI,
                              cpid_info=fn.address.as_dict())


def pci_handle(fn, **extra):
    """An attach handle passing one PCI function through."""
    info = fn.address.as_dict()
    info.update(extra)
    return report.AttachHandle(attach_type=ATTACH_PCI, attach_info=info)


def std_board_info(fn):
    """The PCI identity of a function, as upstream's std_board_info."""
    info = {'vendor_id': '0x' + fn.vendor_id, 'device_id': '0x' + fn.device_id,
            'class': '0x' + fn.class_code}
    if fn.subsystem_vendor_id:
        info['subsystem_vendor_id'] = '0x' + fn.subsystem_vendor_id
    if fn.subsystem_device_id:
        info['subsystem_device_id'] = '0x' + fn.subsystem_device_id
    if fn.numa_node is not None:
        info['numa_node'] = fn.numa_node
    if fn.driver:
        info['kernel_driver'] = fn.driver
    if fn.iommu_group:
        info['iommu_group'] = fn.iommu_group
    return info


def device(fn, kind, model, deployables, driver_name, services=(),
           vendor_info=None):
    """A report.Device for the PCI function that controls the card."""
    return report.Device(
        type=kind, vendor='0x' + fn.vendor_id, model=model,
        controlpath=controlpath(fn), std_board_info=std_board_info(fn),
        vendor_board_info=dict(vendor_info or {}),
        deployables=list(deployables), driver_name=driver_name,
        services=sorted(set(services)))
