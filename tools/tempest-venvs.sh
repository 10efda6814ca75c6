#!/usr/bin/env bash
# Build the virtualenvs of the functional tests that run a real Keystone and
# the real cyborg-tempest-plugin (cyborg/tests/keystone.py,
# cyborg/tests/functional/test_tempest.py), each apart from the test
# virtualenv, whose pins they do not share:
#   .tempest-venvs/keystone  Keystone, served by cheroot
#                            (cyborg/tests/keystone_server.py)
#   .tempest-venvs/tempest   tempest with cyborg-tempest-plugin
#   .tempest-venvs/nova      Nova, Glance and Placement, served by cheroot
#                            (cyborg/tests/nova/wsgi_server.py) or run as
#                            their console scripts (cyborg/tests/nova/)
# Idempotent: a virtualenv built from the same interpreter and requirements
# is kept. Usage: tools/tempest-venvs.sh [keystone|tempest|nova ...]; PYTHON
# picks the interpreter (default python3). On failure pip's whole output
# goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
root=.tempest-venvs

declare -A requirements=(
    [keystone]='keystone==30.0.0 cheroot==11.1.2'
    [tempest]='tempest==47.0.0 cyborg-tempest-plugin==2.8.0'
    [nova]='nova==34.0.0 glance==33.0.0 openstack-placement==16.0.0 cheroot==11.1.2 PyMySQL==1.2.4'
)
# The command whose presence tells a finished virtualenv.
declare -A commands=(
    [keystone]=keystone-manage
    [tempest]=tempest
    [nova]=nova-manage
)

# The pip work of build(), quiet; set -e does not reach into a function
# that is an if's condition, hence the explicit chain.
install() {
    local name=$1 dir=$root/$1
    # shellcheck disable=SC2086 # the requirements are words
    "$python" -m venv "$dir" &&
        "$dir/bin/pip" install --disable-pip-version-check \
            ${requirements[$name]}
}

build() {
    local name=$1 dir=$root/$1 stamp log kept
    if [ -z "${requirements[$name]:-}" ]; then
        echo "unknown virtualenv '$name' (keystone, tempest or nova)" >&2
        return 2
    fi
    stamp="$("$python" -c 'import sys; print(sys.version.split()[0])')"
    stamp="$stamp ${requirements[$name]}"
    kept=
    [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$stamp" ] &&
        "$dir/bin/python" -c '' 2>/dev/null &&
        [ -x "$dir/bin/${commands[$name]}" ] && kept=1
    [ -z "$kept" ] || return 0
    rm -rf "$dir"
    log=$root/$name-pip.log
    # NOTE(tempest-venvs): a half-built virtualenv has no stamp, so the
    # next run starts it again from scratch.
    if ! install "$name" >"$log" 2>&1; then
        echo "building $dir failed:" >&2
        cat "$log" >&2
        return 1
    fi
    rm -f "$log"
    printf '%s\n' "$stamp" >"$dir/.stamp"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(keystone tempest)
mkdir -p "$root"
# NOTE(tempest-venvs): two test runs may build at once; one builds, the
# other waits and then finds the stamp.
exec 9>"$root/.lock"
flock 9
for name in "${names[@]}"; do
    build "$name"
done
