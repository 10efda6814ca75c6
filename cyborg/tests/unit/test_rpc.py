"""cyborg.rpc: calls bounded while the reply queue cannot be set up."""

import threading
import time

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


def test_a_client_without_reply_wait_is_oslo_messagings(fake_rpc):
    client = rpc.get_client(messaging.Target(topic='t'))
    assert isinstance(client, messaging.RPCClient)
