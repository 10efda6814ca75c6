"""Options of the [pci] group: Generic PCI driver (pci_driver) options."""

from oslo_config import cfg

GROUP = cfg.OptGroup('pci', title='Generic PCI driver (pci_driver) options')

opts = []


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(opts, group=GROUP)


def list_opts():
    return {GROUP: opts}
