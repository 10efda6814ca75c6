"""What each project holds, in units of resource classes, for the quotas."""

import collections
import json
import math

import sqlalchemy as sa

from cyborg import exception
from cyborg.db import models
from cyborg.db import orphans
from cyborg.db.session import main

_RESOURCES = 'resources:'


def group_demand(group):
    """{resource class: units} a device profile group asks for."""
    demand = collections.Counter()
    for key, value in group.items():
        if key.startswith(_RESOURCES):
            demand[key[len(_RESOURCES):]] += int(value)
    return dict(demand)


@main.reader
def profile_demand(context, profile_name):
    """{resource class: units} of all groups of the named profile: what
    creating its accelerator requests would add to a project's usage.

    :raises DeviceProfileNotFound: no profile has that name.
    """
    found = context.session.scalars(
        sa.select(models.DeviceProfile.profile_json)
        .where(models.DeviceProfile.name == profile_name)).first()
    if found is None:
        raise exception.DeviceProfileNotFound(uuid=profile_name)
    demand = collections.Counter()
    for group in json.loads(found).get('groups', []):
        demand.update(group_demand(group))
    return dict(demand)


@main.reader
def usage(context, project_id, orphan_age=0):
    """{resource class: units} the project's accelerator requests hold.

    An ARQ is one unit of its profile group; a group asking for several
    classes (rare) shares its ARQs among them in proportion, rounded up.
    The ARQ of a /v1 attach has no profile: it counts every unit of the
    deployable it is attached to, in that deployable's resource class.

    :param orphan_age: seconds after which an ARQ nobody bound is an
        orphan (``cyborg.db.orphans``), which holds nothing; 0: every
        ARQ counts.
    """
    session = context.session
    arq = models.AcceleratorRequest
    held = collections.Counter()
    counted = [arq.project_id == project_id,
               arq.device_profile_id.is_not(None)]
    if orphan_age:
        # NOTE(quota): a fresh Initial ARQ is a boot in progress and
        # counts; one older than the orphan age was given up on.
        counted.append(sa.not_(orphans.condition(orphan_age)))
    by_group = session.execute(
        sa.select(arq.device_profile_id, arq.device_profile_group_id,
                  sa.func.count())
        .where(*counted)
        .group_by(arq.device_profile_id, arq.device_profile_group_id)).all()
    held.update(_of_groups(session, by_group))
    # NOTE(quota): a /v1 attach takes its whole deployable out of the
    # scheduler's hands (Placement reserves all of it), so it holds all of
    # the deployable's units, not one.
    attached = session.execute(
        sa.select(models.Attribute.value,
                  sa.func.sum(models.Deployable.num_accelerators))
        .join(arq, arq.deployable_id == models.Attribute.deployable_id)
        .join(models.Deployable,
              models.Deployable.id == models.Attribute.deployable_id)
        .where(arq.project_id == project_id,
               arq.device_profile_id.is_(None),
               models.Attribute.key == 'rc')
        .group_by(models.Attribute.value)).all()
    for resource_class, units in attached:
        held[resource_class] += int(units or 0)
    return dict(held)


def _of_groups(session, by_group):
    """{resource class: units} of ``(profile id, group index, count of
    ARQs)`` rows: an ARQ is one unit of its group, and a group asking for
    several classes (rare) shares its ARQs among them in proportion,
    rounded up."""
    held = collections.Counter()
    profiles = {}
    if by_group:
        profiles = dict(session.execute(
            sa.select(models.DeviceProfile.id,
                      models.DeviceProfile.profile_json)
            .where(models.DeviceProfile.id.in_(
                sorted({row[0] for row in by_group}))
            )).all())
    for profile_id, index, count in by_group:
        groups = json.loads(profiles.get(profile_id) or '{}').get(
            'groups', [])
        demand = group_demand(groups[index]) if index < len(groups) else {}
        units = sum(demand.values())
        for resource_class, amount in demand.items():
            held[resource_class] += math.ceil(count * amount / units)
    return held


def arqs_demand(session, rows):
    """{resource class: units} that these ARQ rows (of profiles) hold, as
    ``usage`` counts them."""
    counted = collections.Counter(
        (row.device_profile_id, row.device_profile_group_id) for row in rows
        if row.device_profile_id is not None)
    return dict(_of_groups(session, [
        (profile, index, count)
        for (profile, index), count in sorted(counted.items())]))


@main.reader
def attach_demand(context, deployable_uuid):
    """{resource class: units} a /v1 attach of this deployable takes: all
    of its units; {} when no deployable has that uuid (an accelerator no
    agent sees takes nothing)."""
    found = context.session.execute(
        sa.select(models.Attribute.value, models.Deployable.num_accelerators)
        .join(models.Deployable,
              models.Deployable.id == models.Attribute.deployable_id)
        .where(models.Deployable.uuid == deployable_uuid,
               models.Attribute.key == 'rc')).first()
    return {} if found is None else {found[0]: int(found[1])}
