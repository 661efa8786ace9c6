# Pinned versions of the local cluster's upstream components (sourced by scripts/cluster/*.sh).
# K8S_VERSION may be set by the caller (local-cluster.sh --k8s-version); 1.34.x is the floor for
# DRA. Each is built once per version into $TORUS_CACHE.
: "${K8S_VERSION:=v1.37.2}"
: "${CONTAINERD_VERSION:=v2.4.2}"
: "${ETCD_VERSION:=v3.6.16}"
: "${KWOK_VERSION:=v0.8.0}"
# containerd 2 writes OCI runtime specs newer than Debian bookworm's runc (1.1) understands.
: "${RUNC_VERSION:=v1.5.2}"
: "${TORUS_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/torus}"
: "${KUEUE_VERSION:=v0.17.0}"
: "${LWS_VERSION:=v0.7.0}"
