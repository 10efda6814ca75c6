"""The conductor's decisions for each provider: the agent's old cases."""

# NOTE(tests): these are the cases the agent decided on its own before
# (its placement._reserved, the traits and /v1 attachments it combined);
# the agent now writes what the conductor decides.

import pytest

from cyborg import states
from cyborg.common import decisions
from cyborg.db import host_rows
from cyborg.db import models
from cyborg.drivers.report import DeviceKey

RESERVED = [states.DEVICE_INACTIVE, states.DEVICE_ACTIVATING,
            states.DEVICE_MAINTAINING, states.DEVICE_ERROR,
            states.DEVICE_LOST, None]


@pytest.mark.parametrize('status', RESERVED)
def test_a_device_not_ready_is_fully_reserved(status):
    assert decisions.provider(status)['reserved'] is True


def test_a_ready_device_is_free():
    assert decisions.provider(states.DEVICE_READY) == {
        'reserved': False, 'traits': ['OWNER_CYBORG'], 'in_use': False}


def test_a_fault_reserves_even_a_ready_device():
    assert decisions.provider(states.DEVICE_READY,
                              fault='too hot')['reserved'] is True


def test_an_attached_deployable_is_reserved_and_in_use():
    decided = decisions.provider(states.DEVICE_READY, attached=True)
    assert decided['reserved'] is True and decided['in_use'] is True


def test_a_bound_handle_is_in_use_but_not_reserved():
    # NOTE(tests): the instance's allocation already holds the unit.
    decided = decisions.provider(states.DEVICE_READY,
                                 handles_in_use=[False, True])
    assert decided == {'reserved': False, 'traits': ['OWNER_CYBORG'],
                       'in_use': True}


def test_held_in_placement_is_in_use():
    assert decisions.in_use(held=True)
    assert not decisions.in_use([False, False])


def test_traits_combine_cyborg_services_driver_and_operators():
    assert decisions.provider(
        states.DEVICE_READY, services=['crypto.sym'],
        driver_traits=['CUSTOM_FPGA_INTEL'],
        operator_traits=['CUSTOM_MINE'])['traits'] == [
        'CUSTOM_CYBORG_SERVICE_CRYPTO_SYM', 'CUSTOM_FPGA_INTEL',
        'CUSTOM_MINE', 'OWNER_CYBORG']


def _device(status, handle_in_use=False, attach_type=None):
    dep = models.Deployable(name='h_dev', num_accelerators=4)
    dep.attributes = [models.Attribute(key='rc', value='FPGA'),
                      models.Attribute(key='trait0', value='CUSTOM_DRV'),
                      models.Attribute(key='trait_mine', value='CUSTOM_OP')]
    dep.attach_handles = [models.AttachHandle(in_use=handle_in_use)]
    if attach_type:
        dep.accelerator = models.Accelerator(attach_type=attach_type)
    device = models.Device(uuid='u1', status=status,
                           services='["compression"]')
    device.deployables = [dep]
    return device


KEY = DeviceKey.of('PCI', {'domain': '0000', 'bus': '3d'})


@pytest.mark.parametrize('status', RESERVED[:-1])
def test_the_answer_reserves_every_status_but_ready(status):
    decided = host_rows.state(KEY, _device(status))['providers']['h_dev']
    assert decided['reserved'] is True


def test_the_answer_carries_each_providers_decision():
    found = host_rows.state(KEY, _device(states.DEVICE_READY))
    assert found['controlpath'] == list(KEY)
    assert found['traits'] == {'h_dev': ['CUSTOM_OP']}
    assert found['providers'] == {'h_dev': {
        'reserved': False, 'in_use': False,
        'traits': ['CUSTOM_CYBORG_SERVICE_COMPRESSION', 'CUSTOM_DRV',
                   'CUSTOM_OP', 'OWNER_CYBORG']}}


def test_the_answer_says_what_is_in_use():
    bound = host_rows.state(KEY, _device(states.DEVICE_READY, True))
    assert bound['providers']['h_dev']['in_use'] is True
    assert bound['providers']['h_dev']['reserved'] is False
    attached = host_rows.state(KEY, _device(states.DEVICE_READY,
                                            attach_type='host'))
    assert attached['taken'] == ['h_dev']
    assert attached['providers']['h_dev']['reserved'] is True
    assert attached['providers']['h_dev']['in_use'] is True


def test_a_report_answer_and_device_states_agree(stack, ctx):
    agent = stack()
    agent.report()
    (device,) = agent.last_result['devices']
    assert all(p['reserved'] for p in device['providers'].values())
    assert agent.conductor.device_states(ctx, agent.host) == \
        agent.last_result['devices']
