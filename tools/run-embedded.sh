#!/usr/bin/env bash
# Set up a virtualenv (once) and run the embedded default: API, conductor and
# agent in one process on SQLite with in-process messaging and no auth.
# Extra arguments go to cyborg-all-in-one (for example --config-file FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${CYBORG_VENV:-.venv}
if [ ! -x "$venv/bin/cyborg-all-in-one" ]; then
    echo "Creating $venv and installing Cyborg (first run only)..." >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip >&2
    "$venv/bin/pip" install -q -r requirements.txt >&2
    "$venv/bin/pip" install -q -e ".[embedded]" >&2
fi
exec "$venv/bin/cyborg-all-in-one" "$@"
