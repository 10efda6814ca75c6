#!/bin/bash
#
# plugin.sh: DevStack runs this at each phase of stack.sh, unstack.sh and
# clean.sh; the work is in lib/cyborg.

source "$(dirname "${BASH_SOURCE[0]}")/lib/cyborg"

if is_service_enabled cyborg; then
    if [[ "$1" == "stack" && "${2:-}" == "install" ]]; then
        echo_summary "Installing Cyborg"
        install_cyborg

    elif [[ "$1" == "stack" && "${2:-}" == "post-config" ]]; then
        echo_summary "Configuring Cyborg"
        configure_cyborg
        # NOTE(devstack): the node that serves the API registers it; agent
        # nodes only use what the controller created.
        if is_service_enabled cyborg-api && is_service_enabled key; then
            create_cyborg_accounts
        fi
        if is_service_enabled nova; then
            configure_nova_for_cyborg
        fi
        init_cyborg

    elif [[ "$1" == "stack" && "${2:-}" == "extra" ]]; then
        echo_summary "Starting Cyborg"
        start_cyborg

    elif [[ "$1" == "stack" && "${2:-}" == "test-config" ]]; then
        if is_service_enabled tempest; then
            echo_summary "Configuring Tempest for Cyborg"
            configure_cyborg_tempest
        fi
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_cyborg
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_cyborg
    fi
fi
