"""The base of the API types, and the query-string shapes lists share."""

import datetime
import json

import wsme.api
from wsme.rest import json as wsme_json
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


class JsonType(wtypes.UserType):
    """Any JSON value, passed through as it is: a member whose content is
    free-form (an accelerator's acc_capability), or a whole body a handler
    made JSON-ready itself."""

    basetype = wtypes.text
    name = 'json'

    def tobasetype(self, value):
        return value

    def frombasetype(self, value):
        return value

    def validate(self, value):
        return value


JSON = JsonType()


def rendered(body):
    """What a handler returns for a list ``body`` it built from the rows
    of a list view (status 200).

    NOTE(api): a list of thousands of items would take a WSME object per
    item (and per link) to render; the collection types still describe
    what these bodies hold.
    """
    return wsme.api.Response(body, status_code=200, return_type=JSON)


class ListOrItem(wtypes.UserType):
    """A list of ``item_type``; one bare item is taken as a list of one."""

    name = 'list_or_item'

    def __init__(self, item_type):
        self.item_type = item_type
        self.basetype = wtypes.ArrayType(item_type)

    def frombasetype(self, value):
        return value


@wsme_json.fromjson.when_type(ListOrItem)
def _list_or_item_fromjson(datatype, value):
    if isinstance(value, dict):
        value = [value]
    return wsme_json.fromjson(datatype.basetype, value)


class Body(wtypes.Base):
    """A request body: its members as the client gave them."""

    def as_dict(self):
        """The members the body set (Unset ones left out)."""
        return {attr.name: getattr(self, attr.key)
                for attr in wtypes.list_attributes(type(self))
                if getattr(self, attr.key) is not wtypes.Unset}


def as_plain(value):
    """A converted body back to plain JSON data (dicts, lists, values)."""
    if isinstance(value, Body):
        return {name: as_plain(item)
                for name, item in value.as_dict().items()}
    if isinstance(value, list):
        return [as_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: as_plain(item) for key, item in value.items()}
    return value


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
