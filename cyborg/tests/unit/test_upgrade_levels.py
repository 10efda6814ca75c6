"""[upgrade_levels]: version caps, older forms and object backports."""

from unittest import mock

from oslo_messaging.rpc import client as client_mod
import pytest

from cyborg import exception
from cyborg import objects
from cyborg import upgrade_levels
from cyborg.conductor import agent_rpcapi
from cyborg.conductor import indirection_client
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.objects import base
from cyborg.objects import device
from cyborg.objects import service


class _Sent(list):
    """(version, method, kwargs) of what the clients sent, not sending."""

    def __call__(self, cctxt, context, method, **kwargs):
        self.append((cctxt.target.version, method, kwargs))


@pytest.fixture
def sent(monkeypatch):
    sent = _Sent()
    for name in ('call', 'cast'):
        monkeypatch.setattr(
            client_mod._CallContext, name,
            lambda self, ctxt, method, **kw: sent(self, ctxt, method, **kw))
    return sent


def test_unset_pin_sends_the_newest(fake_rpc):
    api = conductor_rpcapi.ConductorAPI()
    assert api.client.version_cap == api.RPC_API_VERSION
    assert api.object_versions is None


def test_pin_newer_than_this_release_is_refused(fake_rpc, override):
    override('agent', '9.0', group='upgrade_levels')
    with pytest.raises(exception.ConfigError, match='upgrade_levels'):
        agent_rpcapi.AgentAPI()


def test_object_history_ends_at_the_registered_versions():
    objects.register_all()
    newest = max(upgrade_levels.CONDUCTOR_OBJECTS,
                 key=upgrade_levels._tuple)
    assert newest == conductor_rpcapi.ConductorAPI.RPC_API_VERSION
    # NOTE(tests): notifications go to the notifier, never over RPC.
    registered = {name: classes[0].VERSION for name, classes in
                  base.CyborgObjectRegistry.obj_classes().items()
                  if not classes[0].__module__.startswith(
                      'cyborg.notifications.')}
    assert upgrade_levels.CONDUCTOR_OBJECTS[newest] == registered


def test_conductor_objects_of_an_older_version():
    pins = upgrade_levels.conductor_objects('1.5')
    assert (pins['Device'], pins['Deployable'], pins['Service']) == (
        '1.1', '1.0', '1.1')
    assert 'AcceleratorRequest' not in upgrade_levels.conductor_objects('1.3')


def test_conductor_pinned_raises_for_newer_methods(fake_rpc, override, ctx,
                                                   sent):
    override('conductor', '1.5', group='upgrade_levels')
    api = conductor_rpcapi.ConductorAPI()
    with pytest.raises(exception.RPCVersionCapped, match='1.6'):
        api.list_accelerators(ctx)
    api.invalidate_lists(ctx, 'me')
    api.create_attribute(ctx, 1, 'k', 'v')
    assert [(v, m) for v, m, _ in sent] == [('1.5', 'create_attribute')]


def test_conductor_pinned_before_1_5(fake_rpc, override, ctx, sent):
    override('conductor', '1.4', group='upgrade_levels')
    api = conductor_rpcapi.ConductorAPI()
    api.finish_binds(ctx, ['a'], failed={'b': 'instance'})
    assert sent == [('1.4', 'finish_binds', {'uuids': ['a']})]
    with pytest.raises(exception.RPCVersionCapped):
        api.list_arqs(ctx, instance_uuid='i', resolved=True)
    api.list_arqs(ctx, instance_uuid='i')
    with pytest.raises(exception.RPCVersionCapped):
        api.program_deployable(ctx, 'u', 'image')


def test_agent_pinned_sends_the_older_handle_call(fake_rpc, override, ctx,
                                                  sent):
    override('agent', '1.3', group='upgrade_levels')
    api = agent_rpcapi.AgentAPI()
    api.prepare_handle(ctx, 'node1', 'drv', 'MDEV', '{}', 'h',
                       arq_uuid='arq')
    ((version, method, kwargs),) = sent
    assert (version, method) == ('1.3', 'prepare_handle')
    assert 'arq_uuid' not in kwargs
    with pytest.raises(exception.RPCVersionCapped, match='agent'):
        api.consumers(ctx, 'node1', 'dep')


def test_agent_pinned_before_1_3(fake_rpc, override, ctx, sent):
    override('agent', '1.2', group='upgrade_levels')
    api = agent_rpcapi.AgentAPI()
    with pytest.raises(exception.RPCVersionCapped, match='program'):
        api.program(ctx, 'node1', 'drv', 'PCI', '{}', 'dep', 'image')
    api.update_device_states(ctx, 'node1', [])


def test_serializer_backports_to_the_pins(ctx):
    serializer = base.CyborgObjectSerializer({'Service': '1.1'})
    svc = service.Service(ctx, host='h', binary='cyborg-agent',
                          rpc_version='1.4')
    (primitive,) = serializer.serialize_entity(ctx, [svc])
    assert primitive['cyborg_object.version'] == '1.1'
    assert 'rpc_version' not in primitive['cyborg_object.data']
    with pytest.raises(exception.RPCVersionCapped):
        serializer.serialize_entity(ctx, device.Device(ctx, hostname='h'))


def test_indirection_asks_for_pinned_versions(fake_rpc, override, ctx):
    override('conductor', '1.5', group='upgrade_levels')
    api = indirection_client.ConductorIndirectionAPI()
    conductor = mock.Mock(object_versions=upgrade_levels.object_pins())
    api._client = conductor
    api.object_class_action_versions(
        ctx, 'Device', 'get', {'Device': '1.2'}, ('u',), {})
    assert conductor.object_class_action_versions.call_args.args[3] == {
        'Device': '1.1'}


def test_list_view_of_a_pinned_conductor_is_built_from_list(
        fake_rpc, override, ctx, monkeypatch):
    override('conductor', '1.5', group='upgrade_levels')
    api = indirection_client.ConductorIndirectionAPI()
    api._client = mock.Mock(object_versions=upgrade_levels.object_pins())
    dev = device.Device(ctx, uuid='359c0990-0258-44fd-8b05-fc510ac3d022',
                        type='GPU', vendor='0x10de', model='m',
                        std_board_info=None, vendor_board_info=None,
                        hostname='h', status='ready', services=['s'],
                        status_reason=None, created_at=None,
                        updated_at=None)
    listed = mock.Mock(return_value=[dev])
    monkeypatch.setattr(device.Device, 'list', listed)
    view = api.object_class_action_versions(
        ctx, 'Device', 'list_view', {'Device': '1.2'}, (), {'limit': 5})
    listed.assert_called_once_with(ctx, limit=5)
    assert view['fields'][0] == 'uuid' and '"ready"' in view['rows']
    api._client.object_class_action_versions.assert_not_called()
