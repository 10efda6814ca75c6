"""The alembic revisions on MariaDB and PostgreSQL, as on SQLite."""

import pytest

from cyborg.tests import backends
from cyborg.tests.unit.db import test_migrations as checks

pytestmark = pytest.mark.functional


@pytest.fixture(params=['mysql', 'postgresql'])
def engine(request):
    with backends.temp_database(request.param) as url:
        engine = checks.make_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


def test_stairway(engine):
    checks.check_stairway(engine)


def test_walk(engine):
    checks.check_walk(engine)


def test_models_match_migrations(engine):
    checks.check_models_match(engine)


def test_foreign_key_actions(engine):
    checks.check_foreign_key_actions(engine)
