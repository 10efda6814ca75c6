"""Orphaned ARQs on MariaDB and PostgreSQL: reported, then removed once by
two conductors that start together."""

import datetime
import re
import uuid

import pytest
import sqlalchemy as sa

from cyborg.db import models
from cyborg.tests import backends
from cyborg.tests import processes

pytestmark = pytest.mark.functional

AGE = 3600
#: More than one batch (cyborg.conductor.orphans.BATCH) per conductor.
ORPHANS = 250
REMOVED = re.compile(r'Removed (\d+) accelerator requests .*?: (.*)$',
                     re.MULTILINE)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _insert(engine, count, age, **values):
    created = _now() - datetime.timedelta(seconds=age)
    uuids = [str(uuid.uuid4()) for _ in range(count)]
    with engine.begin() as conn:
        profile = conn.execute(sa.select(models.DeviceProfile.id)).scalar()
        if profile is None:
            profile = conn.execute(sa.insert(
                models.DeviceProfile.__table__).values(
                    uuid=str(uuid.uuid4()), name='dp',
                    profile_json='{"groups": [{"resources:FPGA": "1"}]}')
            ).inserted_primary_key[0]
        row = dict(state='Initial', device_profile_id=profile,
                   device_profile_group_id=0, project_id='p1',
                   created_at=created)
        row.update(values)
        conn.execute(sa.insert(models.AcceleratorRequest.__table__),
                     [dict(row, uuid=one) for one in uuids])
    return uuids


def _left(engine):
    with engine.connect() as conn:
        return set(conn.execute(sa.select(
            models.AcceleratorRequest.uuid)).scalars())


def _second(conf, tmp_path):
    path = str(conf).replace('.conf', '-2.conf')
    with open(conf) as source, open(path, 'w') as target:
        target.write(source.read().replace('host = ctl-1', 'host = ctl-2'))
    return processes.Process(
        'cyborg-conductor-2', path, tmp_path,
        command=[processes.script('cyborg-conductor'), '--config-file',
                 path])


@pytest.mark.parametrize('backend', ['mysql', 'postgresql'])
def test_orphans_are_reported_then_removed_once(backend, tmp_path):
    with backends.temp_database(backend) as db_url, \
            backends.temp_rabbit_vhost() as transport_url:
        confs, _port = processes.stack_configs(
            tmp_path, 'node-1', db_url, transport_url, {},
            extra={'conductor': {'orphan_arq_age': AGE}})
        engine = sa.create_engine(db_url)
        try:
            orphans = set(_insert(engine, ORPHANS, AGE + 600))
            fresh = set(_insert(engine, 3, 60))
            bound = set(_insert(engine, 2, AGE + 600, state='Bound',
                                instance_uuid=str(uuid.uuid4())))

            checked = processes.run(
                'cyborg-status', '--config-file', confs['cyborg-conductor'],
                'upgrade', 'check', timeout=120)
            assert ('%d accelerator requests are Initial with no instance'
                    % ORPHANS) in checked.stdout, checked.stdout

            procs = [processes.Process('cyborg-conductor',
                                       confs['cyborg-conductor'], tmp_path),
                     _second(confs['cyborg-conductor'], tmp_path)]
            try:
                processes.wait_for(lambda: _left(engine) == fresh | bound,
                                   60, what='the orphans to go')
            finally:
                processes.stop_cleanly(procs)
            said = []
            for proc in procs:
                for count, uuids in REMOVED.findall(proc.log()):
                    assert int(count) == len(uuids.split(', '))
                    said += uuids.split(', ')
            # Each orphan was removed, and said so, by exactly one of them.
            assert sorted(said) == sorted(orphans)
        finally:
            engine.dispose()
