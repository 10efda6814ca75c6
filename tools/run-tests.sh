#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: lint, the builds of the
# documentation, API reference, release notes and sample config and policy
# (each with warnings as errors), unit tests, then the functional tests
# against RabbitMQ, MariaDB and PostgreSQL (which the tests start when they
# are down). Arguments are passed to pytest, and then only the tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${CYBORG_TOOLS_VENV:-.tox-venv}
if [ ! -x "$venv/bin/tox" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q 'tox>=4.0'
fi
if [ $# -gt 0 ]; then
    exec "$venv/bin/tox" -e pep8,py3,functional -- "$@"
fi
exec "$venv/bin/tox" -e \
    pep8,genconfig,genpolicy,docs,api-ref,releasenotes,py3,functional
