# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# A second replica of the operator waits for the lease, and acts once the first stops.

echo "== a second replica waits for the lease, and acts once the first stops"
# A standby on the local host (the same binary, the admin kubeconfig): it must not act while the
# chart's replica holds the lease, and must take over when that one stops and releases it.
standby_port="$(python3 "$REPO/scripts/cluster/free_port.py")"
"$REPO/build/bin/neuron-ultraserver-operator" --kubeconfig="$KUBECONFIG" --namespace=kube-system \
  --health-probe-bind-address=127.0.0.1:0 --metrics-bind-address="127.0.0.1:$standby_port" \
  > "$STATE_DIR/logs/standby-operator.log" 2>&1 &
standby_pid=$!
stop_standby() { kill "$standby_pid" 2> /dev/null && wait "$standby_pid" 2> /dev/null || true; }
# Without errexit: `(exit 1)` after a failed check would end the trap before finish tore the
# cluster down.
on_exit() { local status=$?; set +e; stop_standby; (exit "$status"); finish; }
trap on_exit EXIT
holder() { k get lease -n kube-system neuron-ultraserver-operator -o jsonpath='{.spec.holderIdentity}'; }
standby_leads() { curl -sf "http://127.0.0.1:$standby_port/metrics" | grep -qx "torus_ultraserver_leader $1"; }
standby_waits() {
  standby_leads 0 || { echo "standby: $(curl -sf "http://127.0.0.1:$standby_port/metrics" | grep leader)"; return 1; }
  [[ "$(holder)" == torus-torus-ultraserver-operator-* ]] || { echo "holder: $(holder)"; return 1; }
}
check "the standby is up and does not lead; the chart's replica holds the lease" eventually 30 standby_waits
k scale deploy -n kube-system torus-torus-ultraserver-operator --replicas=0 > /dev/null
check "once that replica stops, the standby leads" eventually 30 standby_leads 1
workload late 1 NoOp  # one node: mover and stayer still hold two
check "...and acts: a new workload is Allocated" eventually 60 state_is late Allocated
stop_standby
k scale deploy -n kube-system torus-torus-ultraserver-operator --replicas=1 > /dev/null
chart_leads() { [[ "$(holder)" == torus-torus-ultraserver-operator-* ]] || { echo "holder: '$(holder)'"; return 1; }; }
check "the chart's replica takes the released lease back" eventually 60 chart_leads
