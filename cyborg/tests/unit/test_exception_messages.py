"""What an exception raised in another process says, without its trace."""

import sys

from oslo_messaging._drivers import common as rpc_common

from cyborg import exception


def _across_rpc(exc):
    """``exc`` as the caller of a remote endpoint that raised it gets it."""
    try:
        raise exc
    except type(exc):
        data = rpc_common.serialize_remote_exception(sys.exc_info())
    return rpc_common.deserialize_remote_exception(data, ['cyborg.exception'])


def test_a_remote_driver_error_says_only_its_message():
    remote = _across_rpc(exception.DriverError(driver='fake',
                                               reason='reset timed out'))
    assert 'Traceback' in str(remote)
    assert exception.message_of(remote) == (
        'Driver fake failed: reset timed out')


def test_other_exceptions_say_their_first_line():
    assert exception.message_of(ValueError('bad\nvalue')) == 'bad'
    assert exception.message_of(RuntimeError()) == 'RuntimeError'


def test_one_that_crossed_two_processes_says_its_message_once():
    # An agent's error that a conductor got and passed to another.
    remote = _across_rpc(_across_rpc(exception.DriverError(
        driver='fake', reason='no mdev left')))
    assert exception.message_of(remote) == (
        'Driver fake failed: no mdev left')

