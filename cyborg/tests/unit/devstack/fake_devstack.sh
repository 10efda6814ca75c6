#!/bin/bash
#
# fake_devstack.sh: the DevStack functions the Cyborg plugin calls, as
# stand-ins that record each call in $FAKE_CALLS (one line per call, the
# name and its arguments separated by tabs) and write INI files for real.
#
# Needs FAKE_CALLS, FAKE_ROOT (every path a sudo command touches must be
# under it) and FAKE_BIN.

function _fake_record {
    local IFS=$'\t'
    echo "$*" >>"$FAKE_CALLS"
}

# iniset [-sudo] file section option value: as DevStack's, in bash alone
# (no process per call): the option is replaced in place, or added at the
# end of its section, or in a new section at the end of the file.
function iniset {
    if [[ "$1" == "-sudo" ]]; then
        shift
    fi
    local file=$1 section=$2 option=$3 value=$4
    local -a lines=() out=()
    local line in_section=0 placed=0
    if [[ -f "$file" ]]; then
        mapfile -t lines <"$file"
    fi
    for line in "${lines[@]}"; do
        if [[ $line =~ ^\[(.*)\]$ ]]; then
            if ((in_section && !placed)); then
                out+=("$option = $value")
                placed=1
            fi
            in_section=0
            if [[ ${BASH_REMATCH[1]} == "$section" ]]; then
                in_section=1
            fi
        elif ((in_section)) && [[ ${line%%[ =]*} == "$option" ]]; then
            if ((!placed)); then
                out+=("$option = $value")
                placed=1
            fi
            continue
        fi
        out+=("$line")
    done
    if ((!placed)); then
        if ((!in_section)); then
            out+=("[$section]")
        fi
        out+=("$option = $value")
    fi
    printf '%s\n' "${out[@]}" >"$file"
}

function trueorfalse {
    local default=$1
    local value=${!2:-}
    case "$value" in
        1 | [yY]es | YES | [tT]rue | TRUE) echo True ;;
        0 | [nN]o | NO | [fF]alse | FALSE) echo False ;;
        *) echo "$default" ;;
    esac
}

# is_service_enabled: as DevStack's, including is_<name>_enabled functions
# and "nova" for any n-* service.
function is_service_enabled {
    local service
    for service in "$@"; do
        if [[ ,${ENABLED_SERVICES}, =~ ,${service}, ]]; then
            return 0
        fi
        if declare -F "is_${service}_enabled" >/dev/null &&
                "is_${service}_enabled"; then
            return 0
        fi
        if [[ $service == nova && ,${ENABLED_SERVICES} =~ ,n- ]]; then
            return 0
        fi
    done
    return 1
}

function enable_service {
    local service
    for service in "$@"; do
        if ! [[ ,${ENABLED_SERVICES}, =~ ,${service}, ]]; then
            ENABLED_SERVICES+=",$service"
        fi
    done
}

# sudo: runs the command as is, but only on paths under FAKE_ROOT.
function sudo {
    local arg
    for arg in "$@"; do
        if [[ $arg == /* && $arg != "$FAKE_ROOT"/* ]]; then
            echo "fake sudo: $arg is outside $FAKE_ROOT" >&2
            return 1
        fi
    done
    _fake_record sudo "$@"
    "$@"
}

function get_python_exec_prefix {
    echo "$FAKE_BIN"
}

function get_transport_url {
    echo "rabbit://stackrabbit:secret@$SERVICE_HOST:5672/"
}

function database_connection_url {
    echo "mysql+pymysql://root:secret@$SERVICE_HOST/$1?charset=utf8"
}

# setup_logging: the oslo.log options DevStack's systemd logging sets.
function setup_logging {
    iniset "$1" DEFAULT logging_debug_format_suffix \
        "{{(pid=%(process)d) %(funcName)s %(pathname)s:%(lineno)d}}"
    iniset "$1" DEFAULT logging_context_format_string \
        "%(color)s%(levelname)s %(name)s [%(global_request_id)s %(request_id)s] %(message)s"
    iniset "$1" DEFAULT logging_exception_prefix "ERROR %(name)s"
}

# configure_keystone_authtoken_middleware conf user [section] [type]: the
# options DevStack's version writes.
function configure_keystone_authtoken_middleware {
    local conf=$1 user=$2 section=${3:-keystone_authtoken} type=${4:-}
    _fake_record configure_keystone_authtoken_middleware "$@"
    iniset "$conf" "$section" auth_type password
    iniset "$conf" "$section" interface public
    iniset "$conf" "$section" auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$conf" "$section" username "$user"
    iniset "$conf" "$section" password "$SERVICE_PASSWORD"
    iniset "$conf" "$section" user_domain_name "$SERVICE_DOMAIN_NAME"
    iniset "$conf" "$section" project_name "$SERVICE_PROJECT_NAME"
    iniset "$conf" "$section" project_domain_name "$SERVICE_DOMAIN_NAME"
    iniset "$conf" "$section" cafile "$SSL_BUNDLE_FILE"
    iniset "$conf" "$section" memcached_servers "$MEMCACHE_SERVERS"
    if [[ -n "$type" ]]; then
        iniset "$conf" "$section" service_type "$type"
    fi
}

# write_uwsgi_config conf wsgi url http name: the uWSGI side of DevStack's
# version (the Apache side is left out).
function write_uwsgi_config {
    local conf=$1 wsgi=$2 name=$5
    _fake_record write_uwsgi_config "$@"
    rm -f "$conf"
    iniset "$conf" uwsgi module "$wsgi"
    iniset "$conf" uwsgi socket "$FAKE_ROOT/run/$name.socket"
    iniset "$conf" uwsgi master true
    iniset "$conf" uwsgi lazy-apps true
}

function remove_uwsgi_config {
    _fake_record remove_uwsgi_config "$@"
    rm -f "$1"
}

function get_or_create_service {
    _fake_record get_or_create_service "$@"
    echo "service-id-of-$2"
}

function get_or_create_endpoint {
    _fake_record get_or_create_endpoint "$@"
    echo "endpoint-id"
}

function die {
    echo "die: ${*:2}" >&2
    exit 1
}

# The rest only need to be seen to be called.
function _fake_recorder {
    eval "function $1 { _fake_record $1 \"\$@\"; }"
}

for _fake_name in setup_develop install_apache_uwsgi create_service_user \
        get_or_add_user_project_role recreate_database run_process \
        stop_process wait_for_service echo_summary warn; do
    _fake_recorder $_fake_name
done
