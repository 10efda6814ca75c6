"""cyborg.rpc: calls bounded while the reply queue cannot be set up."""

import threading
import time

from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from cyborg import rpc


def test_the_probe_sets_the_reply_queue_up(fake_rpc):
    replies = rpc.reply_queue()
    assert replies is rpc.reply_queue()
    # NOTE(tests): nothing answers the probe; its timeout says it is set up.
    assert replies.wait(5)


def test_a_gated_call_fails_in_time_while_the_broker_is_unreached(
        fake_rpc, monkeypatch):
    reached = threading.Event()
    monkeypatch.setattr(rpc.ReplyQueue, '_probe',
                        lambda self: reached.wait(5) and self._ready.set())
    sent = []
    monkeypatch.setattr(messaging.rpc.client._BaseCallContext, 'call',
                        lambda self, ctxt, method, **kw: sent.append(method))
    client = rpc.get_client(messaging.Target(topic='t'), timeout=1,
                            reply_wait=0.2)
    began = time.monotonic()
    with pytest.raises(messaging.MessageDeliveryFailure):
        client.prepare(version='1.0').call({}, 'first')
    assert time.monotonic() - began < 1
    assert sent == []
    reached.set()
    client.prepare().call({}, 'second')
    client.call({}, 'third')
    assert sent == ['second', 'third']
    # what is not a call goes through the client as it is
    assert client.can_send_version('1.0')


def test_a_client_without_reply_wait_never_waits_for_the_reply_queue(
        fake_rpc, monkeypatch):
    sent = []
    monkeypatch.setattr(messaging.rpc.client._BaseCallContext, 'call',
                        lambda self, ctxt, method, **kw: sent.append(method))
    client = rpc.get_client(messaging.Target(topic='t'))
    client.call({}, 'first')
    client.prepare(timeout=1).call({}, 'second')
    assert sent == ['first', 'second']
    assert rpc._REPLIES is None


def test_rabbit_defaults_apply_unless_a_file_sets_them(tmp_path):
    # NOTE(tests): a transport of the RabbitMQ driver registers its
    # options without connecting; the defaults apply once it has.
    conf = cfg.ConfigOpts()
    path = tmp_path / 'cyborg.conf'
    path.write_text('[oslo_messaging_rabbit]\nrabbit_interval_max = 9\n')
    conf([], default_config_files=[str(path)])
    transport = messaging.get_rpc_transport(
        conf, url='rabbit://guest:guest@127.0.0.1:1/')
    try:
        rpc._rabbit_defaults(conf)
        rabbit = conf.oslo_messaging_rabbit
        assert rabbit.rabbit_qos_prefetch_count == 1
        assert rabbit.rabbit_interval_max == 9
    finally:
        transport.cleanup()


def test_rabbit_defaults_leave_other_drivers_alone():
    conf = cfg.ConfigOpts()
    conf([])
    rpc._rabbit_defaults(conf)
    assert 'oslo_messaging_rabbit' not in conf


class _SilentThenAnswering:
    """Stands in for oslo.messaging's call: the first ``silent`` sends
    time out as a stopped conductor's would; later ones answer."""

    def __init__(self, silent):
        self.silent = silent
        self.sends = []

    def __call__(self, context, ctxt, method, **kwargs):
        self.sends.append({
            'method': method, 'timeout': context.timeout,
            'monitor': context.call_monitor_timeout,
            'deadline_in': rpc.RequestContextSerializer().serialize_context(
                ctxt)['rpc_deadline'] - time.time()})
        if len(self.sends) <= self.silent:
            raise messaging.MessagingTimeout('no reply')
        return 'answer'


@pytest.fixture
def silent_conductor(fake_rpc, monkeypatch):
    def install(silent):
        calls = _SilentThenAnswering(silent)
        monkeypatch.setattr(
            messaging.rpc.client._BaseCallContext, 'call',
            lambda self, ctxt, method, **kw: calls(self, ctxt, method, **kw))
        return calls
    return install


def _api_client(monitor):
    from cyborg.conductor import rpcapi
    return rpc.get_client(messaging.Target(topic='t'), timeout=10,
                          monitor=monitor, resend=rpcapi.may_resend)


def test_a_read_a_conductor_kept_silent_is_sent_again_in_the_time_left(
        silent_conductor):
    from cyborg import context
    calls = silent_conductor(silent=1)
    client = _api_client(monitor=4)
    assert client.prepare(version='1.4').call(
        context.get_admin_context(), 'list_arqs', project_id=None) == \
        'answer'
    first, second = calls.sends
    assert first['monitor'] == second['monitor'] == 4
    assert first['timeout'] == pytest.approx(10, abs=0.5)
    # the second carries what is left of the same 10 s, as its deadline
    assert second['timeout'] <= first['timeout']
    assert second['deadline_in'] == pytest.approx(second['timeout'], abs=1)


def test_a_read_is_not_sent_again_once_its_time_is_nearly_spent(
        silent_conductor):
    from cyborg import context
    calls = silent_conductor(silent=5)
    client = rpc.get_client(messaging.Target(topic='t'), timeout=3,
                            monitor=4, resend=lambda method, kwargs: True)
    with pytest.raises(messaging.MessagingTimeout):
        client.call(context.get_admin_context(), 'get_arq')
    # 3 s is less than the silence it would take to tell: one plain send
    assert [(s['monitor'], round(s['timeout'])) for s in calls.sends] == \
        [(None, 3)]


def test_a_call_kept_for_its_whole_time_is_not_sent_again(fake_rpc,
                                                          monkeypatch):
    """A conductor that heartbeats (busy on the call) until the timeout:
    the call fails there, with no send with no time left."""
    from cyborg import context
    sends = []

    def kept(self, ctxt, method, **kwargs):
        sends.append(self.timeout)
        time.sleep(self.timeout)
        raise messaging.MessagingTimeout('no reply')

    monkeypatch.setattr(messaging.rpc.client._BaseCallContext, 'call', kept)
    client = rpc.get_client(messaging.Target(topic='t'), timeout=2.5,
                            monitor=2, resend=lambda method, kwargs: True)
    with pytest.raises(messaging.MessagingTimeout):
        client.call(context.get_admin_context(), 'get_arq')
    assert len(sends) == 1


@pytest.mark.parametrize('method, kwargs', [
    ('create_arqs', {'profile_name': 'p'}),
    ('delete_arqs', {'uuids': ['a']}), ('unbind_arqs', {'uuids': ['a']}),
    ('object_class_action_versions', {'objmethod': 'create'}),
    ('object_action', {'objmethod': 'save'})])
def test_a_write_that_cannot_run_twice_is_sent_once(silent_conductor,
                                                     method, kwargs):
    from cyborg import context
    calls = silent_conductor(silent=1)
    with pytest.raises(messaging.MessagingTimeout):
        _api_client(monitor=4).call(context.get_admin_context(), method,
                                    **kwargs)
    assert len(calls.sends) == 1
    assert calls.sends[0]['monitor'] is None


@pytest.mark.parametrize('method, kwargs', [
    ('create_arqs', {'profile_name': 'p', 'key': 'k'}),
    ('bind_arqs', {'bindings': {}}),
    ('delete_arqs', {'uuids': None, 'instance_uuid': 'i'})])
def test_a_write_that_may_run_twice_is_sent_again(silent_conductor, method,
                                                  kwargs):
    from cyborg import context
    calls = silent_conductor(silent=1)
    assert _api_client(monitor=4).call(
        context.get_admin_context(), method, **kwargs) == 'answer'
    assert len(calls.sends) == 2


def test_object_reads_and_monitor_off(silent_conductor):
    from cyborg import context
    calls = silent_conductor(silent=1)
    ctxt = context.get_admin_context()
    assert _api_client(monitor=4).call(
        ctxt, 'object_class_action_versions', objmethod='list') == 'answer'
    assert len(calls.sends) == 2
    calls = silent_conductor(silent=1)
    with pytest.raises(messaging.MessagingTimeout):
        _api_client(monitor=0).call(ctxt, 'get_arq')
    assert len(calls.sends) == 1


def test_the_api_client_monitors_reads_as_configured(fake_rpc, override):
    from cyborg.conductor import rpcapi
    override('rpc_call_monitor_timeout', 6, group='api')
    client = rpcapi.for_api().client
    assert client._monitor == 6 and client._resend is rpcapi.may_resend
    assert rpcapi.ConductorAPI().client._monitor == 0


def test_a_missing_reply_queue_is_forgotten_in_seconds(fake_rpc):
    from oslo_messaging._drivers import amqpdriver
    assert amqpdriver.ObsoleteReplyQueuesCache.TTL == rpc.OBSOLETE_REPLY_TTL
    cache = amqpdriver.ObsoleteReplyQueuesCache()
    cache.add('reply_gone', 'msg-1')
    assert not cache.reply_q_valid('reply_gone', 'msg-2')
    assert cache._cache.ttl == rpc.OBSOLETE_REPLY_TTL
