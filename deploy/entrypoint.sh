#!/bin/sh
# Entry point of the an-agent image: "an-agent ARGS...", plus --user from AN_AGENT_LOGIN_FILE when set
# (a file holding user:password, mounted by the exported lab) so the password is never on a command line
# that the lab file or the pod spec shows.
set -eu
if [ -n "${AN_AGENT_LOGIN_FILE:-}" ] && [ "${1:-}" = "serve" ]; then
    login=$(cat "$AN_AGENT_LOGIN_FILE")
    shift
    exec an-agent serve --user "$login" "$@"
fi
exec an-agent "$@"
