"""Fixtures of the driver tests."""

from oslo_config import cfg
import pytest

from cyborg.conf import gpu as gpu_conf

CONF = cfg.CONF


@pytest.fixture
def vgpu(override):
    """Enable vGPU types: vgpu({type: [device addresses] or None})."""
    def _enable(types):
        override('enabled_vgpu_types', list(types), group='gpu_devices')
        gpu_conf.register_dynamic_opts(CONF)
        for vgpu_type, addresses in types.items():
            if addresses is not None:
                override('device_addresses', addresses,
                         group=gpu_conf.vgpu_group_name(vgpu_type))
    return _enable
