#!/usr/bin/env bash
# Build the two flavours of the `openstack accelerator` CLI that
# cyborg/tests/functional/test_cli.py drives, each in its own virtualenv
# because they cannot share one:
#   .cli-venvs/legacy  python-openstackclient < 10.4 with python-cyborgclient
#   .cli-venvs/intree  python-openstackclient >= 10.4 (in-tree commands)
# Both also get this repository, installed editable without dependencies,
# for the commands of its own OSC plugin (cyborg_cli, API accelerator_ops).
# Idempotent: a virtualenv built from the same interpreter and requirements
# is kept, and this repository is installed again only when setup.cfg (its
# entry points) changed. Usage: tools/cli-venvs.sh [legacy|intree ...];
# PYTHON picks the interpreter (default python3). On failure pip's whole
# output goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
root=.cli-venvs

declare -A requirements=(
    [legacy]='python-openstackclient==10.3.1 python-cyborgclient==3.0.0'
    [intree]='python-openstackclient==10.5.0'
)

# The pip work of build(), quiet; set -e does not reach into a function
# that is an if's condition, hence the explicit chains.
install() {
    local name=$1 dir=$root/$1 fresh=$2
    if [ -n "$fresh" ]; then
        # shellcheck disable=SC2086 # the requirements are words
        "$python" -m venv "$dir" &&
            "$dir/bin/pip" install --disable-pip-version-check \
                ${requirements[$name]} || return 1
    fi
    # NOTE(cli-venvs): pbr would write AUTHORS and ChangeLog into the tree
    # on every install; nothing here needs them.
    SKIP_GENERATE_AUTHORS=1 SKIP_WRITE_GIT_CHANGELOG=1 \
        "$dir/bin/pip" install --disable-pip-version-check --no-deps -e .
}

build() {
    local name=$1 dir=$root/$1 base stamp log fresh=yes
    if [ -z "${requirements[$name]:-}" ]; then
        echo "unknown flavour '$name' (legacy or intree)" >&2
        return 2
    fi
    base="$("$python" -c 'import sys; print(sys.version.split()[0])')"
    base="$base ${requirements[$name]}"
    # NOTE(cli-venvs): the stamp's first line decides whether the
    # virtualenv is kept; the second, a hash of setup.cfg, whether this
    # repository (its entry points) must be installed again.
    stamp="$base"$'\n'"setup.cfg $(sha256sum setup.cfg | cut -d' ' -f1)"
    kept=
    [ "$(head -n 1 "$dir/.stamp" 2>/dev/null)" = "$base" ] &&
        "$dir/bin/python" -c '' 2>/dev/null &&
        [ -x "$dir/bin/openstack" ] && kept=1
    if [ -n "$kept" ]; then
        [ "$(cat "$dir/.stamp")" != "$stamp" ] || return 0
        fresh=
    else
        rm -rf "$dir"
    fi
    log=$root/$name-pip.log
    # NOTE(cli-venvs): a half-built virtualenv has no stamp, so the next
    # run starts it again from scratch; a failed install of this
    # repository keeps the old stamp, so the next run tries it again.
    if ! install "$name" "$fresh" >"$log" 2>&1; then
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
