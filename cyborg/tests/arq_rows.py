"""Accelerator requests written straight into a test database, and bound."""

import json

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg import states
from cyborg.db import arqs as arq_db
from cyborg.db import models


def initial(db, count):
    """``count`` Initial ARQs of a new one-group profile; their uuids."""
    with db.begin() as conn:
        profile = conn.execute(sa.insert(models.DeviceProfile).values(
            uuid=uuidutils.generate_uuid(), name=uuidutils.generate_uuid(),
            profile_json=json.dumps({'groups': [{}]}))
        ).inserted_primary_key[0]
        uuids = [uuidutils.generate_uuid() for _ in range(count)]
        conn.execute(sa.insert(models.AcceleratorRequest), [
            {'uuid': uuid, 'state': states.ARQ_INITIAL,
             'device_profile_id': profile, 'device_profile_group_id': 0}
            for uuid in uuids])
    return uuids


def ready(db):
    """Make every device ready: a bind to one in any other status fails
    (states.refuses_binds)."""
    with db.begin() as conn:
        conn.execute(sa.update(models.Device).values(
            status=states.DEVICE_READY, status_reason=None))


def bind(ctx, db, uuids, host='node1'):
    """Start binding ``uuids``, each to an instance of its own, on the
    first deployable's provider; ``start_bind``'s answer."""
    with db.connect() as conn:
        rp = conn.execute(sa.select(models.Deployable.rp_uuid)).scalar()
    return arq_db.start_bind(ctx, {
        uuid: {'hostname': host, 'device_rp_uuid': rp,
               'instance_uuid': uuidutils.generate_uuid()}
        for uuid in uuids})
