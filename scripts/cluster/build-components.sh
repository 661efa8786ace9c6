#!/usr/bin/env bash
# Builds the upstream components of the local cluster from their Go modules at pinned versions,
# once per version, into a cache outside the repo:
#   $TORUS_CACHE/k8s-<version>/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kubectl}
#   $TORUS_CACHE/containerd-<version>/bin/{containerd,containerd-shim-runc-v2,ctr}
#   $TORUS_CACHE/etcd-<version>/bin/etcd
#   $TORUS_CACHE/kwok-<version>/bin/kwok
#   $TORUS_CACHE/runc-<version>/bin/runc
# A finished build leaves a stamp; a second call with the same versions does nothing.
#
# Usage: build-components.sh [--k8s-version=v1.37.2] [--only=k8s,containerd,runc,etcd,kwok]
set -euo pipefail
source "$(dirname "$0")/versions.sh"

only="k8s,containerd,runc,etcd,kwok"
for arg in "$@"; do
  case "$arg" in
    --k8s-version=*) K8S_VERSION="${arg#*=}" ;;
    --only=*) only="${arg#*=}" ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# The k8s.io/kubernetes module points its k8s.io/* staging modules at ./staging, which a
# dependent module cannot use; each is published as k8s.io/<name> v0.<minor>.<patch>.
build_kubernetes() {
  local version="$K8S_VERSION" out="$TORUS_CACHE/k8s-$K8S_VERSION"
  if [[ -f "$out/.complete" ]]; then log "kubernetes $version: cached in $out"; return; fi
  local started=$SECONDS src="$out/src"
  log "kubernetes $version: downloading the module"
  (cd /tmp && go mod download -json "k8s.io/kubernetes@$version" > /dev/null)
  local gomod
  gomod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$version.mod"
  local staging_version="v0.${version#v1.}"
  local replaces=()
  while read -r name; do
    replaces+=("$name=$name $staging_version")
  done < <(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$gomod")
  make_tools_module "$src" k8s.io/kubernetes "$version" "${replaces[@]}"
  local major minor
  major="${version#v}"; major="${major%%.*}"
  minor="${version#v*.}"; minor="${minor%%.*}"
  local ldflags="-s -w"
  local var
  for var in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $var.gitVersion=$version -X $var.gitMajor=$major -X $var.gitMinor=$minor"
    ldflags+=" -X $var.gitTreeState=clean -X $var.buildDate=1970-01-01T00:00:00Z"
  done
  local commands=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
  (
    cd "$src"
    log "kubernetes $version: resolving dependencies"
    local packages=("${commands[@]/#/k8s.io/kubernetes/cmd/}")
    go get "${packages[@]/%/@$version}" > /dev/null
    mkdir -p "$out/bin"
    local i=0 command
    for command in "${commands[@]}"; do
      i=$((i + 1))
      log "kubernetes $version: building $command ($i/${#commands[@]}; the first build on a machine takes 10-20 minutes)"
      go build -ldflags "$ldflags" -o "$out/bin/$command" "k8s.io/kubernetes/cmd/$command"
    done
  )
  check_built_version "$src" k8s.io/kubernetes "$version"
  touch "$out/.complete"
  log "kubernetes $version: built in $((SECONDS - started)) s"
}

build_containerd() {
  local out="$TORUS_CACHE/containerd-$CONTAINERD_VERSION"
  if [[ -f "$out/.complete" ]]; then log "containerd $CONTAINERD_VERSION: cached in $out"; return; fi
  local started=$SECONDS src="$out/src"
  make_tools_module "$src" github.com/containerd/containerd/v2 "$CONTAINERD_VERSION"
  local commands=(containerd containerd-shim-runc-v2 ctr)
  (
    cd "$src"
    log "containerd $CONTAINERD_VERSION: resolving dependencies"
    local packages=("${commands[@]/#/github.com/containerd/containerd/v2/cmd/}")
    go get "${packages[@]/%/@$CONTAINERD_VERSION}" > /dev/null
    mkdir -p "$out/bin"
    local command
    for command in "${commands[@]}"; do
      log "containerd $CONTAINERD_VERSION: building $command"
      go build -tags "no_btrfs no_devmapper no_zfs no_aufs" -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
        -o "$out/bin/$command" "github.com/containerd/containerd/v2/cmd/$command"
    done
  )
  check_built_version "$src" github.com/containerd/containerd/v2 "$CONTAINERD_VERSION"
  touch "$out/.complete"
  log "containerd $CONTAINERD_VERSION: built in $((SECONDS - started)) s"
}

build_etcd() {
  local out="$TORUS_CACHE/etcd-$ETCD_VERSION"
  if [[ -f "$out/.complete" ]]; then log "etcd $ETCD_VERSION: cached in $out"; return; fi
  local started=$SECONDS src="$out/src"
  make_tools_module "$src" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
  (
    cd "$src"
    log "etcd $ETCD_VERSION: resolving dependencies"
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" > /dev/null
    mkdir -p "$out/bin"
    log "etcd $ETCD_VERSION: building etcd"
    go build -ldflags "-s -w" -o "$out/bin/etcd" go.etcd.io/etcd/server/v3
  )
  check_built_version "$src" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
  touch "$out/.complete"
  log "etcd $ETCD_VERSION: built in $((SECONDS - started)) s"
}

build_kwok() {
  local out="$TORUS_CACHE/kwok-$KWOK_VERSION"
  if [[ -f "$out/.complete" ]]; then log "kwok $KWOK_VERSION: cached in $out"; return; fi
  local started=$SECONDS src="$out/src"
  make_tools_module "$src" sigs.k8s.io/kwok "$KWOK_VERSION"
  (
    cd "$src"
    log "kwok $KWOK_VERSION: resolving dependencies"
    go get "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" > /dev/null
    mkdir -p "$out/bin"
    log "kwok $KWOK_VERSION: building kwok"
    go build -ldflags "-s -w" -o "$out/bin/kwok" sigs.k8s.io/kwok/cmd/kwok
  )
  check_built_version "$src" sigs.k8s.io/kwok "$KWOK_VERSION"
  touch "$out/.complete"
  log "kwok $KWOK_VERSION: built in $((SECONDS - started)) s"
}

# runc links libseccomp (cgo), as upstream's release binaries do: seccomp profiles are applied
# by runc itself.
build_runc() {
  local out="$TORUS_CACHE/runc-$RUNC_VERSION"
  if [[ -f "$out/.complete" ]]; then log "runc $RUNC_VERSION: cached in $out"; return; fi
  local started=$SECONDS src="$out/src"
  make_tools_module "$src" github.com/opencontainers/runc "$RUNC_VERSION"
  (
    cd "$src"
    log "runc $RUNC_VERSION: resolving dependencies"
    go get "github.com/opencontainers/runc@$RUNC_VERSION" > /dev/null
    mkdir -p "$out/bin"
    log "runc $RUNC_VERSION: building runc"
    CGO_ENABLED=1 go build -tags seccomp -ldflags "-s -w -X main.version=${RUNC_VERSION#v}" \
      -o "$out/bin/runc" github.com/opencontainers/runc
  )
  check_built_version "$src" github.com/opencontainers/runc "$RUNC_VERSION"
  touch "$out/.complete"
  log "runc $RUNC_VERSION: built in $((SECONDS - started)) s"
}

IFS=, read -ra parts <<< "$only"
for part in "${parts[@]}"; do
  case "$part" in
    k8s) build_kubernetes ;;
    containerd) build_containerd ;;
    runc) build_runc ;;
    etcd) build_etcd ;;
    kwok) build_kwok ;;
    *) echo "build-components: unknown component '$part' (k8s, containerd, runc, etcd, kwok)" >&2; exit 2 ;;
  esac
done
