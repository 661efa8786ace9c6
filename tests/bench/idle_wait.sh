# shellcheck shell=bash
# Sourced by the benchmark scripts: waiting for an idle machine before a measurement, since this
# is a shared 2-core machine.
#
#   source tests/bench/idle_wait.sh; idle=$(wait_idle 60)   # the idle share it saw, in percent

idle_share() {  # percent of CPU time idle over the next 2 s
  local a b i idle total=0
  read -ra a < /proc/stat; sleep 2; read -ra b < /proc/stat
  idle=$(( (b[4] + b[5]) - (a[4] + a[5]) ))
  for i in 1 2 3 4 5 6 7 8; do total=$(( total + b[i] - a[i] )); done
  echo $(( total > 0 ? 100 * idle / total : 0 ))
}

wait_idle() {  # max-seconds: until >= 80 % idle or max-seconds passed; prints the share
  local most=$1 waited=0 share
  while :; do
    share=$(idle_share)
    if (( share >= 80 || waited >= most )); then echo "$share"; return; fi
    waited=$(( waited + 2 ))
  done
}
