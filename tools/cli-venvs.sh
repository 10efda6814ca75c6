#!/usr/bin/env bash
# Build the two flavours of the `openstack accelerator` CLI that
# cyborg/tests/functional/test_cli.py drives, each in its own virtualenv
# because they cannot share one:
#   .cli-venvs/legacy  python-openstackclient < 10.4 with python-cyborgclient
#   .cli-venvs/intree  python-openstackclient >= 10.4 (in-tree commands)
# Idempotent: a virtualenv built from the same interpreter and requirements
# is kept. Usage: tools/cli-venvs.sh [legacy|intree ...]; PYTHON picks the
# interpreter (default python3). On failure pip's whole output goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
root=.cli-venvs

declare -A requirements=(
    [legacy]='python-openstackclient==10.3.1 python-cyborgclient==3.0.0'
    [intree]='python-openstackclient==10.5.0'
)

build() {
    local name=$1 dir=$root/$1 stamp log
    if [ -z "${requirements[$name]:-}" ]; then
        echo "unknown flavour '$name' (legacy or intree)" >&2
        return 2
    fi
    stamp="$("$python" -c 'import sys; print(sys.version.split()[0])')"
    stamp="$stamp ${requirements[$name]}"
    if [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ] &&
            "$dir/bin/python" -c '' 2>/dev/null &&
            [ -x "$dir/bin/openstack" ]; then
        return 0
    fi
    rm -rf "$dir"
    log=$root/$name-pip.log
    # NOTE(cli-venvs): a half-built virtualenv has no stamp, so the next
    # run starts it again from scratch.
    # shellcheck disable=SC2086 # the requirements are words
    if ! { "$python" -m venv "$dir" &&
            "$dir/bin/pip" install --disable-pip-version-check \
                ${requirements[$name]}; } >"$log" 2>&1; then
        echo "building $dir failed:" >&2
        cat "$log" >&2
        return 1
    fi
    rm -f "$log"
    printf '%s\n' "$stamp" >"$dir/.stamp"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(legacy intree)
mkdir -p "$root"
# NOTE(cli-venvs): two test runs may build at once; one builds, the other
# waits and then finds the stamp.
exec 9>"$root/.lock"
flock 9
for name in "${names[@]}"; do
    build "$name"
done
