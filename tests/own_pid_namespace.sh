#!/usr/bin/env bash
# Runs a test binary in a PID namespace of its own, with its own /proc (the CTest launcher when the
# tests run as root): the holder scan and the grant probe then read only the test's processes,
# never a runner's init they may not read. Pid 1 of the namespace is this script's shell, in the
# mount namespace made for /proc; the test runs in another one below it, as the agent's container
# is to a node's init (the grant probe refuses a pid 1 in the agent's own mount namespace: hostPID
# off). When the launcher is killed (a CTest timeout), the namespace's pid 1 goes and every
# process in it with it.
#
#   tests/own_pid_namespace.sh BINARY [ARGS...]
set -euo pipefail
# shellcheck disable=SC2016  # expanded by the inner shell
exec unshare --pid --fork --kill-child --mount-proc \
  bash -c 'unshare --mount -- "$@" & wait "$!"' own-pid-namespace "$@"
