# Sourced by ultraserver_test.sh (its helpers, lib.sh's and dra_lib.sh's and the cluster are in scope).
# The operator runs and builds the NeuronUltraServer from the agents' labels.

check "the operator's Deployment is ready" eventually 120 ready_replicas
ultraserver_built() { us_json | checks_py ultraserver-built "${names[@]}"; }
check "one NeuronUltraServer lists the four nodes by their UltraServer node id" eventually 60 ultraserver_built
