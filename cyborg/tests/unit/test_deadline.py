"""RPC calls carry their deadline; a late one is dropped before it runs."""

import logging
import threading
import time

import oslo_messaging as messaging
import pytest

from cyborg import context as cyborg_context
from cyborg import deadline
from cyborg import exception
from cyborg import rpc
from cyborg.api import errors

REQUEST = 'req-00000000-0000-4000-8000-000000000001'


def _context(**kwargs):
    return cyborg_context.RequestContext(request_id=REQUEST, overwrite=False,
                                         **kwargs)


# --- The deadline and how it is judged ----------------------------------


def test_a_call_carries_the_senders_clock_plus_its_timeout():
    values = deadline.stamp({'user': 'u'}, 10, now=1000.0)
    assert values == {'user': 'u', deadline.DEADLINE: 1010.0,
                      deadline.TIMEOUT: 10}


def test_the_deadline_is_judged_with_the_margin(override):
    override('rpc_deadline_margin', 2.0)
    values = deadline.stamp({}, 10, now=1000.0)
    # In the queue for 5 s: 5 s left, and 2 s of margin for the clocks.
    assert deadline.left(values, now=1005.0) == 7.0
    assert deadline.left(values, now=1013.0) == -1.0


def test_a_clock_behind_the_senders_never_gives_more_than_the_timeout():
    # NOTE(tests): the receiver's clock is an hour behind: by the
    # deadline alone the caller would wait an hour more; it waits at most
    # its timeout from the moment the call was received.
    assert deadline.left(deadline.stamp({}, 10, now=1000.0 + 3600),
                         now=1000.0) == 10
    values = deadline.stamp({}, 10, now=time.time() + 3600)
    began = time.monotonic()
    received = deadline.received(values)
    assert began + 9 < received <= time.monotonic() + 10


def test_a_call_without_a_deadline_is_never_late():
    # A cast, or a caller older than deadlines.
    assert deadline.left({'user': 'u'}) is None
    assert deadline.left({deadline.DEADLINE: 'garbage',
                          deadline.TIMEOUT: 3}) is None
    assert deadline.received({}) is None
    ctx = _context()
    assert ctx.deadline is None
    assert deadline.late_by(ctx) is None
    assert not deadline.passed(ctx)
    deadline.check(ctx, 'anything')


def test_check_drops_a_late_call_and_logs_it_once(caplog):
    ctx = _context()
    ctx.deadline = time.monotonic() + 60
    deadline.check(ctx, 'Creating 1 accelerator requests')
    ctx.deadline = time.monotonic() - 3
    with caplog.at_level(logging.INFO, logger='cyborg.deadline'):
        with pytest.raises(exception.DeadlineExceeded) as raised:
            deadline.check(ctx, 'Creating 1 accelerator requests')
    assert 'stopped waiting for it 3.0 seconds ago' in str(raised.value)
    (record,) = [r for r in caplog.records if r.name == 'cyborg.deadline']
    assert record.levelno == logging.INFO
    assert REQUEST in record.getMessage()
    assert 'Creating 1 accelerator requests' in record.getMessage()


# --- The request context over RPC ---------------------------------------


def test_a_calls_context_round_trips_with_its_deadline():
    serializer = rpc.RequestContextSerializer()
    ctx = _context(project_id='p1', roles=['member'])
    sent = serializer.serialize_context(rpc._Calling(ctx, 5))
    assert sent[deadline.TIMEOUT] == 5
    assert abs(sent[deadline.DEADLINE] - (time.time() + 5)) < 1
    began = time.monotonic()
    received = serializer.deserialize_context(sent)
    assert received.request_id == REQUEST
    assert received.project_id == 'p1'
    assert began + 4 < received.deadline <= time.monotonic() + 5
    # NOTE(tests): the deadline is this process's; it is never sent on
    # (a nested call stamps its own, a cast none).
    assert deadline.DEADLINE not in received.to_dict()
    assert serializer.serialize_context(received).keys() == \
        ctx.to_dict().keys()
    assert received.elevated().deadline == received.deadline


def test_a_cast_or_an_older_callers_context_has_no_deadline():
    serializer = rpc.RequestContextSerializer()
    sent = serializer.serialize_context(_context())
    assert deadline.DEADLINE not in sent
    assert serializer.deserialize_context(sent).deadline is None


def test_calls_stamp_their_own_timeout(fake_rpc, monkeypatch, override):
    target = messaging.Target(topic='t', version='1.0')
    # NOTE(tests): oslo.messaging registers the option with its first
    # client.
    rpc.get_client(target)
    override('rpc_response_timeout', 42)
    sent = []

    def record(kind):
        def send(self, ctxt, method, **kwargs):
            values = ctxt
            if self.serializer is not None:
                values = self.serializer.serialize_context(ctxt)
            sent.append((kind, method, values))
        return send
    monkeypatch.setattr(messaging.rpc.client._BaseCallContext, 'call',
                        record('call'))
    monkeypatch.setattr(messaging.rpc.client._BaseCallContext, 'cast',
                        record('cast'))
    ctx = _context()
    rpc.get_client(target, timeout=7).call(ctx, 'client_default')
    rpc.get_client(target, timeout=7).prepare(timeout=3).call(ctx, 'own')
    rpc.get_client(target).call(ctx, 'transport_default')
    rpc.get_client(target, timeout=1, reply_wait=5).call(ctx, 'gated')
    rpc.get_client(target, timeout=7).cast(ctx, 'cast')
    # NOTE(tests): the gated client's probe of the reply queue is sent
    # without a context of ours.
    timeouts = {method: values.get(deadline.TIMEOUT)
                for _kind, method, values in sent if method != 'probe'}
    assert timeouts == {'client_default': 7, 'own': 3,
                        'transport_default': 42, 'gated': 1, 'cast': None}
    # The caller's own context is left as it was.
    assert ctx.deadline is None


# --- The RPC server drops a late call before its endpoint runs -------------


class _Endpoint:
    target = messaging.Target(version='1.0')

    def __init__(self):
        self.calls = []
        self.ran = threading.Event()

    def work(self, context, value):
        self.calls.append(value)
        self.ran.set()
        return value * 2


def test_the_endpoint_layer_drops_a_late_call(caplog):
    endpoint = _Endpoint()
    wrapped = rpc._Deadlined(endpoint)
    assert wrapped.target is endpoint.target
    assert wrapped.calls is endpoint.calls
    on_time = _context()
    on_time.deadline = time.monotonic() + 60
    assert wrapped.work(on_time, value=2) == 4
    assert wrapped.work(_context(), value=3) == 6
    late = _context()
    late.deadline = time.monotonic() - 1
    with caplog.at_level(logging.INFO):
        with pytest.raises(messaging.ExpectedException) as raised:
            wrapped.work(late, value=4)
    assert isinstance(raised.value.exc_info[1], exception.DeadlineExceeded)
    assert endpoint.calls == [2, 3]
    dropped = [r for r in caplog.records if 'Dropped' in r.getMessage()]
    assert len(dropped) == 1
    assert 'RPC call work of request %s' % REQUEST in dropped[0].getMessage()


def test_a_call_late_on_arrival_is_answered_and_not_run(fake_rpc,
                                                       monkeypatch):
    endpoint = _Endpoint()
    target = messaging.Target(topic='deadline-test', server='s1',
                              version='1.0')
    server = rpc.get_server(target, [endpoint])
    server.start()
    try:
        client = rpc.get_client(messaging.Target(topic='deadline-test',
                                                 version='1.0'), timeout=10)
        assert client.call(_context(), 'work', value=1) == 2
        # NOTE(tests): as if the message had waited a minute in the queue
        # of a stopped server: its sender stamped it a minute ago.
        stamp = deadline.stamp
        monkeypatch.setattr(deadline, 'stamp', lambda values, timeout: stamp(
            values, timeout, now=time.time() - 60))
        with pytest.raises(exception.DeadlineExceeded):
            client.call(_context(), 'work', value=5)
        assert endpoint.calls == [1]
    finally:
        server.stop()
        server.wait()


def test_a_caller_that_still_waits_gets_a_503():
    # NOTE(tests): only when the clocks disagree by more than the margin.
    assert errors.status_for(exception.DeadlineExceeded(
        action='RPC call create_arqs', late='0.5')) == 503
