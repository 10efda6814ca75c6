"""The agent's scrub endpoint (RPC 1.8) and the drivers it says scrub."""

import json

import pytest

from cyborg import exception
from cyborg.agent import driver_ops
from cyborg.conductor import agent_rpcapi
from cyborg.drivers import base

HOST = 'node1'
DEPLOYABLE = 'node1_FakeDevice'
CPID_INFO = json.dumps({'domain': '0000', 'bus': '0c', 'device': '00',
                        'function': '0'}, sort_keys=True)


@pytest.fixture
def agent(stack):
    agent = stack(HOST)
    agent.report()
    return agent


def _scrub(ctx, name=DEPLOYABLE, driver='fake'):
    return agent_rpcapi.AgentAPI().scrub_deployable(
        ctx, HOST, driver, 'PCI', CPID_INFO, name)


def test_a_driver_with_scrub_off_scrubs_nothing(agent, ctx, monkeypatch):
    called = []
    driver = agent.tracker.driver_named('fake')
    monkeypatch.setattr(driver, 'scrub', lambda *a: called.append(a))
    assert _scrub(ctx) == {'scrubbed': False}
    assert called == []


def test_scrub_runs_the_driver_and_reads_the_host_again(agent, ctx,
                                                       override,
                                                       monkeypatch):
    override('scrub_on_release', True, group='fake_driver')
    invalidated = []
    original = agent.tracker.invalidate
    monkeypatch.setattr(agent.tracker, 'invalidate',
                        lambda: (invalidated.append(1), original())[1])
    assert _scrub(ctx) == {'scrubbed': True}
    assert invalidated == [1]


def test_nothing_to_scrub_is_not_scrubbed(agent, ctx, override,
                                         monkeypatch):
    override('scrub_on_release', True, group='fake_driver')
    driver = agent.tracker.driver_named('fake')
    seen = []
    monkeypatch.setattr(driver, 'scrub',
                        lambda device, dep: (seen.append(dep.name), False)[1])
    assert _scrub(ctx) == {'scrubbed': False}
    assert seen == [DEPLOYABLE]


def test_a_failed_scrub_comes_back_as_a_driver_error(agent, ctx, override):
    override('scrub_on_release', True, group='fake_driver')
    override('scrub_failure', 'stuck in reset', group='fake_driver')
    with pytest.raises(exception.DriverError, match='stuck in reset'):
        _scrub(ctx)


def test_an_unexpected_driver_failure_is_a_driver_error(agent, ctx,
                                                        override,
                                                        monkeypatch):
    override('scrub_on_release', True, group='fake_driver')
    driver = agent.tracker.driver_named('fake')

    def broken(device, deployable):
        raise OSError('EIO')

    monkeypatch.setattr(driver, 'scrub', broken)
    with pytest.raises(exception.DriverError, match='EIO'):
        _scrub(ctx)


def test_an_unknown_deployable_is_a_driver_error(agent, ctx, override):
    override('scrub_on_release', True, group='fake_driver')
    with pytest.raises(exception.DriverError, match='no deployable nope'):
        _scrub(ctx, name='nope')


def test_a_driver_not_enabled_is_a_driver_error(agent, ctx):
    with pytest.raises(exception.DriverError, match='not enabled'):
        _scrub(ctx, driver='nvidia_gpu')


def test_an_agent_pinned_before_1_8_is_not_asked(stack, ctx, override):
    stack(HOST)
    override('agent', '1.7', group='upgrade_levels')
    with pytest.raises(exception.RPCVersionCapped, match='1.8'):
        _scrub(ctx)


# --- scrubbing_drivers in the report. ---------------------------------------

def test_details_name_the_drivers_that_scrub(agent, override):
    assert driver_ops.details(agent.tracker)['scrubbing_drivers'] == []
    override('scrub_on_release', True, group='fake_driver')
    assert driver_ops.details(agent.tracker)['scrubbing_drivers'] == [
        'fake']


def test_a_change_of_the_scrubbing_drivers_sends_a_report(agent, override):
    sent = []
    original = agent.conductor.report_delta

    def spy(context, host, delta, **kwargs):
        sent.append(delta)
        return original(context, host, delta, **kwargs)

    agent.conductor.report_delta = spy
    agent.report()
    assert sent == []
    override('scrub_on_release', True, group='fake_driver')
    agent.report()
    (delta,) = sent
    assert (delta['changed'], delta['removed']) == ([], [])
    assert delta['scrubbing_drivers'] == ['fake']
    assert agent.cache.identity['scrubbing_drivers'] == ['fake']
    agent.report()
    assert len(sent) == 1


def test_a_driver_whose_group_lacks_the_option_does_not_scrub():
    class Odd(base.AcceleratorDriver):
        name = 'odd'
        # NOTE(tests): a group without scrub_on_release, a driver
        # author's slip; the reports go on.
        scrub_group = 'agent'

        def discover(self, ctx):
            return []

    assert driver_ops.scrubs(Odd()) is False
