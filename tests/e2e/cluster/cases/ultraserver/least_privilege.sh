# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# Everything above ran without the API server refusing any of Torus's identities.

echo "== least privilege held: no Torus identity was refused by the API server"
refusals() { checks_py audit-refusals "$STATE_DIR/logs/audit.log" system:serviceaccount:kube-system:torus; }
check "no 403 for the operator's or the agents' ServiceAccounts in the audit log" refusals
