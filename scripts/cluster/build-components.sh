#!/usr/bin/env bash
# Builds the upstream components of the local cluster from their Go modules at pinned versions,
# once per version, into a cache outside the repo:
#   $TORUS_CACHE/k8s-<version>/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kubectl}
#   $TORUS_CACHE/containerd-<version>/bin/{containerd,containerd-shim-runc-v2,ctr}
#   $TORUS_CACHE/etcd-<version>/bin/etcd
#   $TORUS_CACHE/kwok-<version>/bin/kwok
#   $TORUS_CACHE/runc-<version>/bin/runc
#   $TORUS_CACHE/scheduler-perf-<version>/bin/dra.test   (only when asked: --only=scheduler-perf)
#   $TORUS_CACHE/kueue-<version>/{bin/kueue,config/}      (only when asked: --only=kueue)
#   $TORUS_CACHE/lws-<version>/{bin/lws,config/}          (only when asked: --only=lws)
# (config/ holds the CRDs and webhook configurations from the same module.)
# A finished build leaves a stamp; a second call with the same versions does nothing.
#
# Usage: build-components.sh [--k8s-version=v1.37.2] [--only=k8s,containerd,runc,etcd,kwok]
#        (also: scheduler-perf, kueue, lws)
set -euo pipefail
source "$(dirname "$0")/versions.sh"

only="k8s,containerd,runc,etcd,kwok"
for arg in "$@"; do
  case "$arg" in
    --k8s-version=*) K8S_VERSION="${arg#*=}" ;;
    --only=*) only="${arg#*=}" ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-components: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

export GOFLAGS="-buildvcs=false -trimpath"
# Static binaries: the chart's scheduler image holds kube-scheduler alone.
export CGO_ENABLED=0

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# make_tools_module DIR MODULE VERSION [REPLACE_FROM=REPLACE_TO@VERSION ...]: a throwaway module in
# DIR that requires MODULE@VERSION, so `go build` can name its main packages. Every `go get` below
# names the version too: without it, go get upgrades to the newest release.
make_tools_module() {
  local dir="$1" module="$2" version="$3"
  shift 3
  mkdir -p "$dir"
  {
    echo "module torus.local/cluster-tools"
    echo
    echo "go 1.26"
    echo
    echo "require $module $version"
    for replace in "$@"; do
      echo "replace ${replace%%=*} => ${replace#*=}"
    done
  } > "$dir/go.mod"
}

# check_built_version DIR MODULE VERSION: the tools module really resolved MODULE at VERSION.
check_built_version() {
  local resolved
  resolved="$(cd "$1" && go list -m -f '{{.Version}}' "$2")"
  [[ "$resolved" == "$3" ]] || { log "$2: built $resolved, not the pinned $3"; exit 1; }
}

# build_module NAME MODULE VERSION TAGS LDFLAGS BINARY=PACKAGE...: builds the main PACKAGEs of
# MODULE@VERSION into $TORUS_CACHE/NAME-VERSION/bin/BINARY, once. MODULE_REPLACES (an array, may
# be empty) holds replace directives for the tools module.
# with_progress LABEL COMMAND...: runs COMMAND, saying every 30 s how long LABEL has taken, so a
# first build (minutes of Go compiling) never looks stuck.
with_progress() {
  local label="$1" started=$SECONDS pid status
  shift
  "$@" &
  pid=$!
  while ! wait_briefly "$pid" 30; do
    log "$label: still building ($((SECONDS - started)) s so far)"
  done
  wait "$pid" && status=0 || status=$?
  return "$status"
}

# wait_briefly PID SECONDS: true once PID has exited, false if it still runs after SECONDS.
wait_briefly() {
  local pid="$1" deadline=$((SECONDS + $2))
  while kill -0 "$pid" 2> /dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}

build_module() {
  local name="$1" module="$2" version="$3" tags="$4" ldflags="$5"
  shift 5
  local out="$TORUS_CACHE/$name-$version"
  if [[ -f "$out/.complete" ]]; then log "$name $version: cached in $out"; return; fi
  local started=$SECONDS src="$out/src"
  make_tools_module "$src" "$module" "$version" "${MODULE_REPLACES[@]}"
  (
    cd "$src"
    log "$name $version: resolving dependencies"
    local target packages=()
    for target in "$@"; do packages+=("${target#*=}@$version"); done
    with_progress "$name $version: dependencies" go get "${packages[@]}" > /dev/null
    mkdir -p "$out/bin"
    local i=0
    for target in "$@"; do
      i=$((i + 1))
      log "$name $version: building ${target%%=*} ($i/$#)"
      with_progress "$name $version: ${target%%=*}" \
        go build -tags "$tags" -ldflags "$ldflags" -o "$out/bin/${target%%=*}" "${target#*=}"
    done
  )
  check_built_version "$src" "$module" "$version"
  touch "$out/.complete"
  log "$name $version: built in $((SECONDS - started)) s"
}

# The k8s.io/kubernetes module points its k8s.io/* staging modules at ./staging, which a
# dependent module cannot use; each is published as k8s.io/<name> v0.<minor>.<patch>. The first
# build on a machine takes about 8 minutes on 2 cores.
kubernetes_replaces() {
  local version="$1"
  (cd /tmp && go mod download -json "k8s.io/kubernetes@$version" > /dev/null)
  local gomod
  gomod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$version.mod"
  local staging_version="v0.${version#v1.}" name
  MODULE_REPLACES=()
  while read -r name; do
    MODULE_REPLACES+=("$name=$name $staging_version")
  done < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$gomod")
}

build_kubernetes() {
  local version="$K8S_VERSION"
  kubernetes_replaces "$version"
  local major minor
  major="${version#v}"; major="${major%%.*}"
  minor="${version#v*.}"; minor="${minor%%.*}"
  local ldflags="-s -w" var
  for var in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $var.gitVersion=$version -X $var.gitMajor=$major -X $var.gitMinor=$minor"
    ldflags+=" -X $var.gitTreeState=clean -X $var.buildDate=1970-01-01T00:00:00Z"
  done
  local targets=() command
  for command in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
    targets+=("$command=k8s.io/kubernetes/cmd/$command")
  done
  build_module k8s k8s.io/kubernetes "$version" "" "$ldflags" "${targets[@]}"
  MODULE_REPLACES=()
}

# Upstream's scheduler_perf DRA benchmarks (test/integration/scheduler_perf/dra and its
# partitionabledevices) as test binaries, for tests/bench/dra_scheduler_perf.sh. Each reads its
# workloads from ./performance-config.yaml and starts its own etcd (on PATH). About 8 minutes on
# 2 cores once.
build_scheduler_perf() {
  local version="$K8S_VERSION" base=k8s.io/kubernetes/test/integration/scheduler_perf/dra
  local out="$TORUS_CACHE/scheduler-perf-$version"
  if [[ -f "$out/.complete" ]]; then log "scheduler-perf $version: cached in $out"; return; fi
  local started=$SECONDS
  kubernetes_replaces "$version"
  make_tools_module "$out/src" k8s.io/kubernetes "$version" "${MODULE_REPLACES[@]}"
  (
    cd "$out/src"
    log "scheduler-perf $version: resolving dependencies"
    with_progress "scheduler-perf $version: dependencies" \
      go get -t "$base@$version" "$base/partitionabledevices@$version" > /dev/null
    mkdir -p "$out/bin"
    log "scheduler-perf $version: building dra.test, partitionable.test"
    # Without -trimpath: the harness finds its API server's test certificates by source path.
    local flags="-buildvcs=false"
    with_progress "scheduler-perf $version: dra.test" \
      env GOFLAGS="$flags" go test -c -o "$out/bin/dra.test" "$base"
    with_progress "scheduler-perf $version: partitionable.test" \
      env GOFLAGS="$flags" go test -c -o "$out/bin/partitionable.test" "$base/partitionabledevices"
  )
  check_built_version "$out/src" k8s.io/kubernetes "$version"
  MODULE_REPLACES=()
  touch "$out/.complete"
  log "scheduler-perf $version: built in $((SECONDS - started)) s"
}

build_containerd() {
  local module=github.com/containerd/containerd/v2
  build_module containerd "$module" "$CONTAINERD_VERSION" "no_btrfs no_devmapper no_zfs no_aufs" \
    "-s -w -X $module/version.Version=$CONTAINERD_VERSION" \
    "containerd=$module/cmd/containerd" \
    "containerd-shim-runc-v2=$module/cmd/containerd-shim-runc-v2" "ctr=$module/cmd/ctr"
}

build_etcd() {
  build_module etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "" "-s -w" \
    "etcd=go.etcd.io/etcd/server/v3"
}

build_kwok() {
  build_module kwok sigs.k8s.io/kwok "$KWOK_VERSION" "" "-s -w" "kwok=sigs.k8s.io/kwok/cmd/kwok"
}

# runc links libseccomp (cgo), as upstream's release binaries do: seccomp profiles are applied
# by runc itself.
build_runc() {
  CGO_ENABLED=1 build_module runc github.com/opencontainers/runc "$RUNC_VERSION" seccomp \
    "-s -w -X main.version=${RUNC_VERSION#v}" "runc=github.com/opencontainers/runc"
}

# The placers the ecosystem runs on Torus's labels (Kueue's topology-aware scheduling, LeaderWorkerSet's
# exclusive placement), for local-cluster.sh --placers: build_placer NAME MODULE VERSION PACKAGE
# LDFLAGS MANIFEST... builds PACKAGE into bin/NAME and copies each MANIFEST (a file or folder of
# the module: CRDs, webhook configurations) into config/, so the cluster installs exactly the
# objects of the version it runs. About 7 minutes for both on 2 cores, once.
build_placer() {
  local name="$1" module="$2" version="$3" package="$4" ldflags="$5"
  shift 5
  build_module "$name" "$module" "$version" "" "$ldflags" "$name=$package"
  local out="$TORUS_CACHE/$name-$version" source manifest
  [[ -d "$out/config" ]] && return
  source="$(cd "$out/src" && go list -m -f '{{.Dir}}' "$module")"
  mkdir -p "$out/config.partial"
  for manifest in "$@"; do cp -r "$source/$manifest" "$out/config.partial/"; done
  chmod -R u+w "$out/config.partial"
  mv "$out/config.partial" "$out/config"
}

MODULE_REPLACES=()
IFS=, read -ra parts <<< "$only"
for part in "${parts[@]}"; do
  case "$part" in
    k8s) build_kubernetes ;;
    containerd) build_containerd ;;
    runc) build_runc ;;
    etcd) build_etcd ;;
    kwok) build_kwok ;;
    scheduler-perf) build_scheduler_perf ;;
    kueue) build_placer kueue sigs.k8s.io/kueue "$KUEUE_VERSION" sigs.k8s.io/kueue/cmd/kueue \
      "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
      config/components/crd/bases config/components/webhook/manifests.yaml ;;
    lws) build_placer lws sigs.k8s.io/lws "$LWS_VERSION" sigs.k8s.io/lws/cmd "-s -w" \
      config/crd/bases config/webhook/manifests.yaml ;;
    *) echo "build-components: unknown component '$part' (k8s, containerd, runc, etcd, kwok, scheduler-perf, kueue, lws)" >&2; exit 2 ;;
  esac
done
