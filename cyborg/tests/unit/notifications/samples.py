"""The documented notification samples, and the check of a notification
received against them: same envelope, same payload keys and value types.
"""

import json
import os

from cyborg import objects
from cyborg.objects import base as objects_base

SAMPLES = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
    os.pardir, os.pardir, 'doc', 'source', 'reference',
    'notification_samples')
NS = objects_base.CyborgObject.OBJ_SERIAL_NAMESPACE


def names() -> list:
    """The event types that have a sample."""
    return sorted(name[:-len('.json')] for name in os.listdir(SAMPLES)
                  if name.endswith('.json'))


def load(event_type: str) -> dict:
    with open(os.path.join(SAMPLES, event_type + '.json')) as handle:
        return json.load(handle)


def mismatches(received: dict, sample: dict | None = None) -> list:
    """How ``received`` (event_type, priority, publisher_id, payload: as a
    consumer reads them) differs from its sample; [] when it matches.

    Values may differ; their types may not, except that a field the
    payload class declares nullable may be null in either.
    """
    objects.register_all()
    sample = sample or load(received['event_type'])
    problems = []
    if received.get('event_type') != sample['event_type']:
        problems.append('event_type: %r, sample %r' % (
            received.get('event_type'), sample['event_type']))
    priority = _priority(received, sample)
    if received.get('priority') != priority:
        problems.append('priority: %r, documented %r' % (
            received.get('priority'), priority))
    binary = sample['publisher_id'].split(':')[0]
    if not str(received.get('publisher_id')).startswith(binary + ':'):
        problems.append('publisher_id %r is not of %s' % (
            received.get('publisher_id'), binary))
    problems += _object(received.get('payload'), sample['payload'],
                        'payload')
    return problems


#: The priority of a health change, by the health it changed to (see the
#: notifications reference); other events have their sample's.
_HEALTH_PRIORITY = {'failed': 'ERROR', 'degraded': 'WARN'}


def _priority(received, sample):
    if sample['event_type'] != 'accelerator.device.health_change':
        return sample['priority']
    data = (received.get('payload') or {}).get('%s.data' % NS) or {}
    return _HEALTH_PRIORITY.get(data.get('health'), 'INFO')


def _object(got, want, where):
    if not isinstance(got, dict):
        return ['%s is not an object: %r' % (where, got)]
    problems = []
    for key in ('name', 'namespace', 'version'):
        if got.get('%s.%s' % (NS, key)) != want['%s.%s' % (NS, key)]:
            problems.append('%s %s: %r, sample %r' % (
                where, key, got.get('%s.%s' % (NS, key)),
                want['%s.%s' % (NS, key)]))
    if problems:
        return problems
    cls = objects_base.CyborgObjectRegistry.obj_classes()[
        want['%s.name' % NS]][0]
    data, wanted = got.get('%s.data' % NS, {}), want['%s.data' % NS]
    if set(data) != set(wanted):
        return ['%s keys: %s, sample %s' % (where, sorted(data),
                                            sorted(wanted))]
    for name, value in wanted.items():
        if value is None or data[name] is None:
            if not cls.fields[name].nullable:
                problems.append('%s.%s is null, which it may not be'
                                % (where, name))
        elif type(data[name]) is not type(value):
            problems.append('%s.%s: %s, sample %s' % (
                where, name, type(data[name]).__name__,
                type(value).__name__))
    return problems
