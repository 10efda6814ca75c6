"""The decorator of every API handler: WSME types, JSON, our errors."""

import functools
import inspect

import wsme.api
from wsmeext import pecan as wsme_pecan

from cyborg.api import errors


def expose(*args, **kwargs):
    """``wsexpose`` that turns exceptions into the right status and fault.

    Arguments are those of ``wsmeext.pecan.wsexpose``: the return type,
    then the argument types, then options (``body``, ``status_code``...).
    """
    kwargs.setdefault('rest_content_types', ('json',))

    def decorate(func):
        @functools.wraps(func)
        def guarded(self, *call_args, **call_kwargs):
            try:
                return func(self, *call_args, **call_kwargs)
            except Exception as exc:
                status, message = errors.describe(exc)
                # NOTE(errors): returned, not raised, so WSME neither logs
                # a second traceback nor puts str(exc) in the body.
                return wsme.api.Response(
                    errors.Fault.build(status, message), status_code=status,
                    return_type=errors.Fault)

        # NOTE(expose): WSME reads the handler's arguments with
        # getfullargspec, which honours __signature__ but not __wrapped__.
        guarded.__signature__ = inspect.signature(func)
        exposed = wsme_pecan.wsexpose(*args, **kwargs)(guarded)
        # NOTE(expose): functools.wraps in wsexpose copied __signature__ to
        # its (self, *args, **kwargs) wrapper; pecan's REST routing must see
        # that generic form, or it wants path segments for every argument.
        vars(exposed).pop('__signature__', None)
        return exposed

    return decorate


def segments(args, count):
    """The first ``count`` path segments of a plain handler (None where
    missing), then the rest.

    NOTE(expose): plain pecan handlers take ``*args, **kwargs`` only:
    pecan also passes a JSON object body's members as keyword arguments,
    and one named like a path parameter ("uuid") would otherwise replace
    it or clash with it.
    """
    found = list(args[:count]) + [None] * (count - len(args[:count]))
    return found + [tuple(args[count:])]
