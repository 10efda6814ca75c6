"""The agent prepares a handle once per ARQ and never releases another's."""

import os
from unittest import mock

from cyborg.agent import cache as agent_cache

INFO = {'domain': '0000', 'bus': '3b', 'device': '00', 'function': '0',
        'asked_type': 'nvidia-35'}
HANDLE = '5d7a3f5e-0d8c-4bb9-a3a2-8a6fb1c0f7b1'


def _agent(stack):
    agent = stack('node1')
    driver = mock.Mock()
    agent.tracker.driver_named = lambda name: driver
    return agent, driver


def test_a_handle_prepared_for_an_arq_is_not_made_again(stack, ctx):
    agent, driver = _agent(stack)
    for _ in range(2):
        agent.prepare_handle(ctx, 'fake', 'MDEV', INFO, HANDLE,
                             arq_uuid='arq-x')
    driver.prepare_handle.assert_called_once_with('MDEV', INFO, HANDLE)


def test_a_release_for_another_arq_leaves_the_mdev(stack, ctx, tmp_path):
    agent, driver = _agent(stack)
    agent.prepare_handle(ctx, 'fake', 'MDEV', INFO, HANDLE, arq_uuid='arq-x')
    agent.release_handle(ctx, 'fake', 'MDEV', INFO, HANDLE, arq_uuid='arq-y')
    driver.release_handle.assert_not_called()
    # The record survives a restart of the agent.
    path = os.path.join(str(tmp_path), 'agent-node1-handles.json')
    assert agent_cache.HandleCache(path).holder(HANDLE) == 'arq-x'
    agent.release_handle(ctx, 'fake', 'MDEV', INFO, HANDLE, arq_uuid='arq-x')
    driver.release_handle.assert_called_once_with('MDEV', INFO, HANDLE)
    assert agent.handles.holder(HANDLE) is None


def test_a_rebound_handle_changes_holder(stack, ctx):
    agent, driver = _agent(stack)
    agent.prepare_handle(ctx, 'fake', 'MDEV', INFO, HANDLE, arq_uuid='arq-x')
    # X's release never came; the conductor gave the handle to Y.
    agent.prepare_handle(ctx, 'fake', 'MDEV', INFO, HANDLE, arq_uuid='arq-y')
    agent.release_handle(ctx, 'fake', 'MDEV', INFO, HANDLE, arq_uuid='arq-x')
    assert driver.prepare_handle.call_count == 2
    driver.release_handle.assert_not_called()


def test_calls_of_an_older_conductor_work_as_before(stack, ctx):
    agent, driver = _agent(stack)
    agent.prepare_handle(ctx, 'fake', 'MDEV', INFO, HANDLE)
    agent.prepare_handle(ctx, 'fake', 'MDEV', INFO, HANDLE)
    agent.release_handle(ctx, 'fake', 'MDEV', INFO, HANDLE)
    assert driver.prepare_handle.call_count == 2
    driver.release_handle.assert_called_once()


def test_the_arq_is_left_out_for_an_agent_before_1_5(ctx):
    from cyborg.conductor import agent_rpcapi

    api = agent_rpcapi.AgentAPI.__new__(agent_rpcapi.AgentAPI)
    api.client = mock.Mock()
    for capped in (False, True):
        api.client.can_send_version.side_effect = (
            lambda version, capped=capped: not capped or version < '1.5')
        api.release_handle(ctx, 'node1', 'fake', 'MDEV', INFO, HANDLE,
                           arq_uuid='arq-x')
        version = api.client.prepare.call_args.kwargs['version']
        kwargs = api.client.prepare.return_value.call.call_args.kwargs
        assert (version, 'arq_uuid' in kwargs) == (
            ('1.3', False) if capped else ('1.5', True))
