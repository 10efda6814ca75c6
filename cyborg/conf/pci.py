"""Options of the [pci] group: Generic PCI driver (pci_driver) options."""

from oslo_config import cfg

GROUP = cfg.OptGroup('pci', title='Generic PCI driver (pci_driver) options')

opts = [
    cfg.MultiStrOpt(
        'device_spec',
        default=[],
        deprecated_name='passthrough_whitelist',
        help='PCI functions the generic PCI driver claims, Nova style: each '
             'value is a JSON object (or a JSON list of objects) whose keys '
             'all have to match. Matching keys: "vendor_id" and '
             '"product_id" (hex, with or without 0x, or "*"); "address", '
             'either a glob string "[[[domain:]bus:]slot][.function]" such '
             'as "0000:3b:*.*" or an object of regular expressions per '
             'field {"domain", "bus", "slot", "function"}; "class_id", a '
             'hex prefix of the PCI class code such as "0302" or "12"; '
             '"devname", a network interface name. Optional report keys: '
             '"resource_class" (default CUSTOM_PCI) and "traits" (a list or '
             'a comma-separated string; names without a standard meaning '
             'are prefixed with CUSTOM and an underscore). The first '
             'matching value decides the resource class and traits of a '
             'function. Physical and '
             'virtual functions are claimed alike, as the values match '
             'them; PCI bridges never are. A value that does not parse '
             'stops the agent at start.'),
    cfg.BoolOpt(
        'scrub_on_release',
        default=True,
        help='When the last accelerator request on a function unbinds, '
             'reset the function (a function-level reset through its sysfs '
             '"reset" file, by the method the kernel picks from '
             '"reset_method") before it is offered again. The capacity '
             'stays reserved while it runs; a reset that fails marks the '
             'device failed. A function the kernel offers no reset for is '
             'offered again as it is.'),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
