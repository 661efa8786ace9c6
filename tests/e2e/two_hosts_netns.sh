#!/usr/bin/env bash
# Two "hosts" as two network namespaces joined by a veth pair: neuron-cc-bench runs two ranks in
# each (own IPC namespace too, so the collectives see four ranks on two hosts: shared memory
# inside each, libfabric tcp across the veth), and AllReduce, AllGather and ReduceScatter must
# pass their data check. Needs root (namespaces, veth); otherwise skipped with exit 77.
#
#   tests/e2e/two_hosts_netns.sh BIN_DIR
set -euo pipefail

bin="${1:?usage: two_hosts_netns.sh BIN_DIR}"
if [[ "$(id -u)" != 0 ]]; then
  echo "SKIP: creating network namespaces needs root" >&2
  exit 77
fi
for tool in ip unshare timeout; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found (iproute2, util-linux)" >&2; exit 77; }
done

# Names unique to this run, so parallel runs and leftovers never collide.
tag="torus$$"
ns_a="${tag}a"
ns_b="${tag}b"
cleanup() {
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
}
trap cleanup EXIT
if ! ip netns add "$ns_a" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces here (no CAP_SYS_ADMIN for this user?)" >&2
  exit 77
fi
ip netns add "$ns_b"
ip link add "${tag}x" type veth peer name "${tag}y"
ip link set "${tag}x" netns "$ns_a"
ip link set "${tag}y" netns "$ns_b"
# A private /30 that exists only inside these two namespaces.
ip -n "$ns_a" addr add 10.254.77.1/30 dev "${tag}x"
ip -n "$ns_b" addr add 10.254.77.2/30 dev "${tag}y"
for ns in "$ns_a" "$ns_b"; do
  ip -n "$ns" link set lo up
done
ip -n "$ns_a" link set "${tag}x" up
ip -n "$ns_b" link set "${tag}y" up

# Both halves of the world prove the same job secret in the bootstrap (ip netns exec keeps the
# environment).
TORUS_COLL_JOB_SECRET="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export TORUS_COLL_JOB_SECRET

# The namespaces are new and empty, so a fixed port is free in them.
root="10.254.77.1:29500"
status=0
for op in allreduce allgather reducescatter; do
  args=(--op "$op" --world-size 4 --ranks 2 --min-bytes 4 --max-bytes 4M --iters 3 --warmup 1
        --check --timeout 30s --root-address "$root")
  FI_PROVIDER="tcp;ofi_rxm" FI_TCP_IFACE="${tag}x" timeout 120 \
    ip netns exec "$ns_a" unshare --ipc "$bin/neuron-cc-bench" "${args[@]}" >"/tmp/$tag.$op.a" 2>&1 &
  a=$!
  FI_PROVIDER="tcp;ofi_rxm" FI_TCP_IFACE="${tag}y" timeout 120 \
    ip netns exec "$ns_b" unshare --ipc "$bin/neuron-cc-bench" "${args[@]}" --first-rank 2 \
    >"/tmp/$tag.$op.b" 2>&1 &
  b=$!
  rc_a=0 rc_b=0
  wait "$a" || rc_a=$?
  wait "$b" || rc_b=$?
  if (( rc_a != 0 || rc_b != 0 )) || grep -qw "fail" "/tmp/$tag.$op.a" ||
     ! grep -q " ok" "/tmp/$tag.$op.a"; then
    echo "FAIL: $op across the veth pair (exit $rc_a / $rc_b)" >&2
    cat "/tmp/$tag.$op.a" "/tmp/$tag.$op.b" >&2
    status=1
  else
    echo "ok: $op, 4 ranks on two namespaces, largest size:"
    tail -1 "/tmp/$tag.$op.a"
  fi
  rm -f "/tmp/$tag.$op.a" "/tmp/$tag.$op.b"
done
exit "$status"
