"""cyborg.rpc: calls bounded while the reply queue cannot be set up."""

import threading
import time

from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from cyborg import rpc


@pytest.fixture
def fake_rpc(override):
    override('transport_url', 'fake:/')
    rpc.cleanup()
    rpc.init(rpc.CONF)
    yield
    rpc.cleanup()


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
