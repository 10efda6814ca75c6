"""The API and the agent never reach the database, even transitively."""

import os
import subprocess
import sys

import grimp
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))

# Modules that may import cyborg.db directly: the conductor, the database
# layer itself, and the controller-side admin tools.
ALLOWED_IMPORTERS = (
    'cyborg.db',
    'cyborg.conductor',
    'cyborg.cmd.all_in_one',
    'cyborg.cmd.conductor',
    'cyborg.cmd.dbsync',
    'cyborg.cmd.status',
    'cyborg.tests',
)

# Processes that hold no database credentials: nothing they import may lead
# to cyborg.db by any chain of imports.
DB_FREE = ('cyborg.api', 'cyborg.agent', 'cyborg.objects', 'cyborg.drivers',
           'cyborg.wsgi', 'cyborg.cmd.api', 'cyborg.cmd.agent')


@pytest.fixture(scope='module')
def graph():
    return grimp.build_graph('cyborg', cache_dir=None)


def direct_db_importers(graph):
    """Modules outside the allowed list that import cyborg.db directly."""
    found = set()
    for module in graph.find_descendants('cyborg.db') | {'cyborg.db'}:
        for importer in graph.find_modules_that_directly_import(module):
            if not importer.startswith(ALLOWED_IMPORTERS):
                found.add((importer, module))
    return found


def db_chains(graph, source):
    """An import chain from ``source`` (or a submodule) to cyborg.db."""
    return graph.find_shortest_chains(importer=source, imported='cyborg.db',
                                      as_packages=True)


def test_import_linter_contracts_hold():
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'lint-imports'),
         '--config', os.path.join(ROOT, '.importlinter'), '--no-cache'],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '0 broken' in result.stdout


def test_only_allowed_modules_import_the_database(graph):
    assert direct_db_importers(graph) == set()


@pytest.mark.parametrize('source', DB_FREE)
def test_no_chain_to_the_database(graph, source):
    assert db_chains(graph, source) == set()


def test_checks_catch_a_violation(graph):
    # The checks above would fail if an API module reached the database.
    graph.add_import(importer='cyborg.api.controllers.v2.devices',
                     imported='cyborg.db.api')
    try:
        assert direct_db_importers(graph) == {
            ('cyborg.api.controllers.v2.devices', 'cyborg.db.api')}
        assert db_chains(graph, 'cyborg.api')
        assert db_chains(graph, 'cyborg.cmd.api')
    finally:
        graph.remove_import(importer='cyborg.api.controllers.v2.devices',
                            imported='cyborg.db.api')


# The conductor orchestrates; SQL and the models stay in cyborg.db.
SQL_MODULES = ('sqlalchemy', 'cyborg.db.models', 'cyborg.db.session')


def conductor_sql_importers(graph):
    """(conductor module, SQL module) pairs of direct imports."""
    found = set()
    for module in graph.find_descendants('cyborg.conductor'):
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.split('.')[0] == 'sqlalchemy':
                imported = 'sqlalchemy'
            if imported in SQL_MODULES:
                found.add((module, imported))
    return found


@pytest.fixture(scope='module')
def full_graph():
    return grimp.build_graph('cyborg', include_external_packages=True,
                              cache_dir=None)


def test_the_conductor_writes_no_sql(full_graph):
    assert conductor_sql_importers(full_graph) == set()


def test_sql_check_catches_a_violation(full_graph):
    full_graph.add_import(importer='cyborg.conductor.bind.store',
                          imported='cyborg.db.models')
    try:
        assert conductor_sql_importers(full_graph) == {
            ('cyborg.conductor.bind.store', 'cyborg.db.models')}
    finally:
        full_graph.remove_import(importer='cyborg.conductor.bind.store',
                                 imported='cyborg.db.models')
