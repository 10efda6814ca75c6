"""Liveness records: a first record that races another is run again."""

from oslo_db import exception as db_exc
import pytest

from cyborg.db import services


@pytest.mark.parametrize('error', [db_exc.DBDuplicateEntry,
                                   db_exc.DBDeadlock])
def test_first_record_is_run_again_after_a_race(db, ctx, monkeypatch,
                                                error):
    upsert, calls = services._upsert, []

    def racing(*args):
        calls.append(args)
        if len(calls) == 1:
            # NOTE(tests): what MariaDB answers when another conductor's
            # first record took the key or the gap lock first.
            raise error()
        return upsert(*args)

    monkeypatch.setattr(services, '_upsert', racing)
    services.heartbeat(ctx, 'ctl-1', 'cyborg-conductor', version='1.0',
                       rpc_version='1.7')
    assert len(calls) == 2
    row, = services.agent_generations(ctx, 'cyborg-conductor',
                                      ['ctl-1']).items()
    assert row == ('ctl-1', None)
