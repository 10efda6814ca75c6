"""Partition modes of an NVIDIA GPU: offered, current, and why none offers."""

# NOTE(gpu): the driver (nvidia_gpu) reads the GPU and builds its
# deployables; this module names what that arrangement is (a mode) and,
# when it offers nothing, says why in words an operator can act on.

import os_resource_classes as orc

from cyborg.conf import gpu as gpu_conf
from cyborg.drivers import base
from cyborg.drivers import pci

#: The command an operator switches a device's partition mode with.
SET_MODE = 'openstack accelerator device mode set'


def offered_modes(pf, vfs, offered):
    """The partition modes of one GPU: whole, or any type of its PF, or
    any type of its VFs.

    :param offered: {function address: {type id: MdevType}}.
    """
    modes = {base.MODE_PASSTHROUGH}
    modes.update(base.MODE_VGPU + type_id for type_id in offered[pf.address])
    modes.update(base.MODE_SRIOV_VGPU + type_id
                 for vf in vfs for type_id in offered[vf.address])
    return sorted(modes)


def held(pf, vfs, offered):
    """{vGPU type: its mode} of the types whose vGPUs the GPU holds, on
    itself or on its VFs, in type order."""
    found = {}
    for fn in [pf] + vfs:
        prefix = base.MODE_VGPU if fn is pf else base.MODE_SRIOV_VGPU
        for type_id, kind in offered[fn.address].items():
            if kind.created:
                found[type_id] = prefix + type_id
    return dict(sorted(found.items()))


def derived(pf, vfs, offered, deployables):
    """The mode of what the options made of a GPU: passthrough when it is
    offered whole, a type's mode when that one type alone is offered,
    None otherwise."""
    if len(deployables) != 1:
        return None
    (dep,) = deployables
    handle = dep.attach_handles[0]
    if dep.resource_class == orc.PGPU:
        return (base.MODE_PASSTHROUGH
                if pci.handle_address(handle) == pf.address else None)
    type_id = handle.attach_info['asked_type']
    on_vfs = any(type_id in offered[vf.address] for vf in vfs)
    return (base.MODE_SRIOV_VGPU if on_vfs else base.MODE_VGPU) + type_id


def why_unoffered(pf, holds, enabled, applied):
    """Why a GPU that its options arrange offers nothing.

    :param holds: ``held``'s answer for the GPU.
    :param enabled: ``[gpu_devices] enabled_vgpu_types``.
    :param applied: the enabled types that select this GPU (it offers
        them, and their ``device_addresses`` name it or are empty).
    """
    if len(holds) > 1:
        return ('it holds vGPUs of several types (%s), which is no one '
                'mode: remove the vGPUs of all types but one, whose mode '
                'it then takes, or remove them all and choose its mode '
                '(%s)' % (', '.join(holds), SET_MODE))
    if holds:
        (type_id,) = holds
        group = gpu_conf.vgpu_group_name(type_id)
        if type_id in enabled and type_id not in applied:
            return ('it holds vGPUs of %s, but [%s] device_addresses does '
                    'not select it: add %s there, or remove the vGPUs'
                    % (type_id, group, pf.address))
        if applied and type_id not in applied:
            return ('it holds vGPUs of %s, which [gpu_devices] '
                    'enabled_vgpu_types does not enable, and they leave no '
                    'room for the enabled %s: enable %s as well, or remove '
                    'the vGPUs' % (type_id, ', '.join(applied), type_id))
        return ('vGPU type %s, whose vGPUs it holds, has no room left on it '
                "for Cyborg: they fill the type's max_instance, or sit on "
                'functions that [%s] device_addresses leaves out'
                % (type_id, group))
    if applied:
        return ('the vGPU types enabled for it (%s) have no room on it '
                '(available_instances reads 0 and it holds no vGPU), and a '
                'GPU they select is not passed through: check the NVIDIA '
                'vGPU manager, or leave the GPU out of their '
                'device_addresses' % ', '.join(applied))
    # NOTE(gpu): not reached by the arrangements the driver makes today; a
    # device that offers nothing always says something.
    return 'none of its functions can be offered: see its warnings'


def why_mode_unoffered(mode, holds):
    """Why a GPU in the chosen ``mode`` offers nothing.

    :param holds: ``held``'s answer for the GPU.
    """
    if mode == base.MODE_PASSTHROUGH:
        return ('it is in mode %s but holds vGPUs of %s made outside that '
                'mode: remove them and it is offered whole%s'
                % (mode, ', '.join(holds), _or_choose(holds)))
    others = {type_id: other for type_id, other in holds.items()
              if other != mode}
    if others:
        return ('it is in mode %s but holds vGPUs of %s, which leave no '
                'room for its type: remove them%s'
                % (mode, ', '.join(others), _or_choose(others)))
    return ('it is in mode %s but its type has no room on it '
            '(available_instances reads 0 and it holds no vGPU): check the '
            'NVIDIA vGPU manager, or choose another mode (%s)'
            % (mode, SET_MODE))


def _or_choose(holds):
    """', or choose the mode <m> (<command>)' when the vGPUs are of one
    type, whose mode would offer the rest of it."""
    if len(holds) != 1:
        return ''
    (mode,) = holds.values()
    return ', or choose the mode %s (%s)' % (mode, SET_MODE)
