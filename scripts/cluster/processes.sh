# Starting, waiting for and stopping the local cluster's processes (sourced by local-cluster.sh).
# Every process runs in its own session (setsid), its pid in $STATE/pids/NAME.pid and its output
# in $STATE/logs/NAME.log; `down` stops them by pid, newest first.
#
# Reads: REPO, STATE (local-cluster.sh).

log() { printf '[local-cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  python3 "$REPO/scripts/cluster/free_port.py"
}

# start_process NAME COMMAND...: runs COMMAND in the background, logging to $STATE/logs/NAME.log.
start_process() {
  local name="$1"
  shift
  mkdir -p "$STATE/pids" "$STATE/logs"
  printf '%q ' "$@" > "$STATE/pids/$name.cmd"
  setsid "$@" >> "$STATE/logs/$name.log" 2>&1 < /dev/null &
  echo $! > "$STATE/pids/$name.pid"
  grep -qx "$name" "$STATE/pids/order" 2> /dev/null || echo "$name" >> "$STATE/pids/order"
}

# start_recorded NAME: starts NAME again with the command line it had (after stop_process).
start_recorded() {
  local name="$1" command
  [[ -f "$STATE/pids/$name.cmd" ]] || die "no process named $name was started from $STATE"
  process_alive "$name" && die "$name runs already"
  command="$(cat "$STATE/pids/$name.cmd")"
  eval "start_process $name $command"
}

# restart_process NAME: stops NAME and starts it again with the command line it had.
restart_process() {
  [[ -f "$STATE/pids/$1.cmd" ]] || die "no process named $1 was started from $STATE"
  stop_process "$1"
  start_recorded "$1"
}

process_alive() {
  local pid_file="$STATE/pids/$1.pid"
  [[ -f "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2> /dev/null
}

# wait_for NAME SECONDS CHECK...: runs CHECK until it succeeds; fails with the log's tail if NAME
# exits or SECONDS pass first.
wait_for() {
  local name="$1" seconds="$2"
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" > /dev/null 2>&1; do
    if ! process_alive "$name"; then
      tail -n 30 "$STATE/logs/$name.log" >&2
      die "$name exited while starting (log: $STATE/logs/$name.log)"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 30 "$STATE/logs/$name.log" >&2
      die "$name not ready after ${seconds}s (log: $STATE/logs/$name.log)"
    fi
    sleep 0.5
  done
}

# stop_process NAME [SIGNAL]: SIGNAL (default TERM) to its session, SIGKILL after 10 s.
stop_process() {
  local pid_file="$STATE/pids/$1.pid" pid signal="${2:-TERM}"
  [[ -f "$pid_file" ]] || return 0
  pid="$(cat "$pid_file")"
  if kill -0 "$pid" 2> /dev/null; then
    kill "-$signal" -- "-$pid" 2> /dev/null || kill "-$signal" "$pid" 2> /dev/null || true
    local waited=0
    while kill -0 "$pid" 2> /dev/null && ((waited < 100)); do
      sleep 0.1
      waited=$((waited + 1))
    done
    kill -KILL -- "-$pid" 2> /dev/null || kill -KILL "$pid" 2> /dev/null || true
  fi
  rm -f "$pid_file"
}
