# Sourced by dra_test.sh (its helpers, dra_lib.sh's and the cluster are in scope).
# A chip and one of its own cores are never allocated at once.

echo "== partitions: a chip and one of its own cores are never allocated at once"
# kube-scheduler keeps them apart with the neuron-chips counters; its message names no counter
# ("cannot allocate all claims"), so the proof is that the same waiting pod is placed as soon as
# the chip is given back, nothing else changed.
claim_template chip-nine chip.neuron.aws.com "$(chip_id_is 9)"
claim_template core-of-nine core.neuron.aws.com "$(chip_id_is 9)"
dra_pod part-chip chip-nine 3600
check "a pod holding chip 9 runs" eventually 120 phase_is part-chip Running
dra_pod part-core-a core-of-nine 3600
check "a claim for a core of chip 9 waits (Unschedulable: cannot allocate all claims)" \
  eventually 60 unschedulable_with_reason part-core-a
k delete pod -n e2e part-chip --wait=false > /dev/null
check "chip 9 given back: that same pod runs on one of its cores" \
  eventually 120 phase_is part-core-a Running
dra_pod part-core-b core-of-nine 3600
check "a second core of chip 9 runs beside the first" eventually 120 phase_is part-core-b Running
two_cores_of_nine() {
  local a b
  a="$(claim_devices part-core-a)" b="$(claim_devices part-core-b)"
  echo "part-core-a: $a, part-core-b: $b"
  [[ "$a" =~ ^neuroncore3[6-9]$ && "$b" =~ ^neuroncore3[6-9]$ && "$a" != "$b" ]]
}
check "... each on its own core of chip 9 (36-39)" two_cores_of_nine
dra_pod part-chip-again chip-nine
check "while its cores are held, a claim for chip 9 waits (Unschedulable)" \
  eventually 60 unschedulable_with_reason part-chip-again
k delete pod -n e2e part-core-a part-core-b part-chip-again --wait=false > /dev/null
