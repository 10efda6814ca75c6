"""The base of the API types, and the query-string shapes lists share."""

import datetime
import json

import wsme.api
import wsme.types as wtypes

from cyborg import exception
from cyborg.api.types import link


def timestamp(value):
    """A stored time as the API shows it: UTC, whole seconds, "+00:00"."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    else:
        value = value.astimezone(datetime.timezone.utc)
    return value.replace(microsecond=0)


class APIBase(wtypes.Base):
    """A resource as the API renders it, built from a versioned object."""

    created_at = wtypes.wsattr(datetime.datetime, readonly=True)
    updated_at = wtypes.wsattr(datetime.datetime, readonly=True)

    #: Object fields copied as they are; subclasses list theirs.
    _object_fields = ()

    @classmethod
    def from_object(cls, obj, **extra):
        """The API view of ``obj``: its listed fields, timestamps, extras.

        A field the object has not loaded renders as null.
        """
        api = cls()
        for name in cls._object_fields:
            loaded = obj.obj_attr_is_set(name)
            setattr(api, name, getattr(obj, name) if loaded else None)
        for name in ('created_at', 'updated_at'):
            loaded = obj.obj_attr_is_set(name)
            setattr(api, name, timestamp(getattr(obj, name))
                    if loaded else None)
        for name, value in extra.items():
            setattr(api, name, value)
        return api


def timestamp_text(value):
    """``timestamp`` of a time the conductor sent as ISO 8601 text (UTC,
    whole seconds), as WSME renders it."""
    return None if value is None else value + '+00:00'


def view_items(view, shown, resource, bookmark=True):
    """JSON-ready items of a conductor's list view (``fields`` and JSON
    ``rows``): the ``shown`` fields, timestamps as WSME renders them and
    the links of each item."""
    columns = [view['fields'].index(name) for name in shown]
    url = link.public_url()
    for row in json.loads(view['rows']):
        item = {name: row[column]
                for name, column in zip(shown, columns, strict=True)}
        item['created_at'] = timestamp_text(item['created_at'])
        item['updated_at'] = timestamp_text(item['updated_at'])
        item['links'] = link.links_json(url, resource, item['uuid'],
                                        bookmark=bookmark)
        yield item


class _Rendered(wtypes.UserType):
    """A body the handler made JSON-ready itself; WSME renders it as it
    is instead of walking a typed object per item."""

    basetype = wtypes.text
    name = 'rendered'

    def tobasetype(self, value):
        return value


_RENDERED = _Rendered()


def rendered(body):
    """What a WSME handler returns for a ``body`` it built (status 200)."""
    return wsme.api.Response(body, status_code=200, return_type=_RENDERED)


class LegacyFilter(wtypes.Base):
    """The ``filters.field=<f>&filters.value=<v>`` pair of the v1 days."""

    field = wtypes.text
    value = wtypes.text

    def as_pair(self):
        """(field, value); both must be given."""
        field = self.field if self.field is not wtypes.Unset else None
        value = self.value if self.value is not wtypes.Unset else None
        if not field or value is None:
            raise exception.InvalidLegacyFilter(
                reason='give both filters.field and filters.value')
        return field, value


def check_query(params, supported):
    """Refuse query parameters a list does not know.

    :param params: the request's query parameters (a multidict).
    :param supported: the names the handler accepts.
    :raises: UnknownQueryParameter (400).
    """
    unknown = sorted(set(params.keys()) - set(supported))
    if unknown:
        raise exception.UnknownQueryParameter(
            names=', '.join(unknown), supported=', '.join(sorted(supported)))


def with_next(collection, next_link):
    """A list's collection, with its ``next`` link when there is a page more.
    """
    if next_link:
        collection.next = next_link
    return collection
