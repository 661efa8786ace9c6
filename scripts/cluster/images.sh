# Images of the local cluster, built without a Docker engine or a registry (sourced by
# local-cluster.sh), then imported into containerd's k8s.io namespace:
#   localhost/torus-local/pause:<k8s>          upstream's pause.c from the k8s.io/kubernetes module
#   localhost/torus-local/kube-scheduler:<k8s> the kube-scheduler built by build-components.sh
#   localhost/torus-local/torus:<tree hash>    the project's Dockerfile, built by podman on a
#                                              Debian bookworm base made with debootstrap
#   public.ecr.aws/docker/library/debian:bookworm-slim  that base, for deploy/examples
# Each is built once and found again by its tag.
#
# Reads: REPO, STATE, K8S_BIN, CONTAINERD_BIN, RUNC_BIN (local-cluster.sh), TORUS_CACHE, K8S_VERSION
# (versions.sh), NODE_NAMES (nodes.sh).
# Sets: PAUSE_IMAGE, SCHEDULER_IMAGE_REPO and, by build_torus_image, TORUS_IMAGE.

PAUSE_IMAGE="localhost/torus-local/pause:$K8S_VERSION"
SCHEDULER_IMAGE_REPO="localhost/torus-local/kube-scheduler"
TORUS_IMAGE_REPO="localhost/torus-local/torus"
BASE_ROOTFS_TAR="$TORUS_CACHE/debian-bookworm-minbase.tar"

podman_has() { podman image exists "$1" 2> /dev/null; }
# podman runs RUN steps with the runc built for the cluster: Debian's crun, when installed, does
# not work on a hybrid cgroup v1/v2 host like this one, and Debian's runc is older.
podman_build() { podman --runtime "$RUNC_BIN/runc" build "$@"; }

build_pause_image() {
  podman_has "$PAUSE_IMAGE" && return
  local work
  work="$(mktemp -d)"
  local source
  source="$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c"
  [[ -f "$source" ]] || (cd /tmp && go mod download "k8s.io/kubernetes@$K8S_VERSION")
  gcc -Os -Wall -Werror -static -DVERSION="$K8S_VERSION" -o "$work/pause" "$source"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$work/Containerfile"
  podman_build --quiet --network=host -t "$PAUSE_IMAGE" "$work" > /dev/null
  rm -rf "$work"
}

build_scheduler_image() {
  local image="$SCHEDULER_IMAGE_REPO:$K8S_VERSION"
  podman_has "$image" && return
  local work
  work="$(mktemp -d)"
  cp "$K8S_BIN/kube-scheduler" "$work/"
  printf 'FROM scratch\nCOPY kube-scheduler /usr/local/bin/kube-scheduler\nENV PATH=/usr/local/bin\nUSER 65532:65532\n' \
    > "$work/Containerfile"
  podman_build --quiet --network=host -t "$image" "$work" > /dev/null
  rm -rf "$work"
}

# The Dockerfile starts FROM debian:bookworm and debian:bookworm-slim; no registry is reachable,
# so both names point at one minimal bookworm made by debootstrap from Debian's own archive.
ensure_debian_base() {
  if podman_has docker.io/library/debian:bookworm && podman_has docker.io/library/debian:bookworm-slim; then
    return
  fi
  if [[ ! -f "$BASE_ROOTFS_TAR" ]]; then
    local rootfs mirror
    rootfs="$(mktemp -d)"
    # The host's own Debian mirror: debootstrap may reach no other (and none is written here).
    mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2> /dev/null || true)"
    [[ -n "$mirror" ]] || mirror="$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' \
      /etc/apt/sources.list 2> /dev/null || true)"
    if [[ -z "$mirror" ]]; then
      echo "local-cluster: no Debian bookworm mirror in /etc/apt/sources.list.d/debian.sources or" \
        "/etc/apt/sources.list; the image's base is debootstrapped from the mirror apt uses here" >&2
      return 1
    fi
    log "debootstrap: a minimal Debian bookworm from $mirror (about 2 minutes, once)"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$STATE/logs/debootstrap.log" 2>&1 ||
      { tail -20 "$STATE/logs/debootstrap.log" >&2; return 1; }
    # The same package sources as the host, so install-deps.sh finds the same versions.
    cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/" 2> /dev/null &&
      rm -f "$rootfs/etc/apt/sources.list"
    rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
    tar -C "$rootfs" -cf "$BASE_ROOTFS_TAR.tmp" .
    mv "$BASE_ROOTFS_TAR.tmp" "$BASE_ROOTFS_TAR"
    rm -rf "$rootfs"
  fi
  podman import --quiet "$BASE_ROOTFS_TAR" docker.io/library/debian:bookworm > /dev/null
  podman tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim
}

# The tag is the hash of the build context as git sees it (tracked and untracked, not ignored),
# so an unchanged tree reuses its image and any edit builds a new one.
torus_image_tag() {
  (
    cd "$REPO"
    {
      git ls-files -s
      git ls-files --others --exclude-standard -z | xargs -0 -r sha256sum
      git diff --no-ext-diff
    } | sha256sum | cut -c1-16
  )
}

build_torus_image() {
  local image="$TORUS_IMAGE_REPO:$(torus_image_tag)"
  TORUS_IMAGE="$image"
  podman_has "$image" && { log "image $image: already built"; return; }
  ensure_debian_base
  log "image $image: podman build of the Dockerfile (Release build inside; about 10 minutes on 2 cores)"
  local started=$SECONDS
  if ! podman_build --pull=never --network=host -f "$REPO/Dockerfile" -t "$image" "$REPO" \
    > "$STATE/logs/image-build.log" 2>&1; then
    tail -30 "$STATE/logs/image-build.log" >&2
    return 1
  fi
  log "image $image: built in $((SECONDS - started)) s"
}

# import_image IMAGE: podman's copy into every node's containerd (k8s.io namespace: what the
# kubelet sees), saved once and imported into the nodes side by side.
import_image() {
  local image="$1" archive="" name socket pids=() pid failed=0
  for name in "${NODE_NAMES[@]}"; do
    socket="$(node_dir "$name")/containerd/containerd.sock"
    if "$CONTAINERD_BIN/ctr" --address "$socket" -n k8s.io images ls -q 2> /dev/null | grep -qxF "$image"; then
      continue
    fi
    if [[ -z "$archive" ]]; then
      archive="$(mktemp --suffix=.tar)"
      podman save --quiet --format docker-archive -o "$archive" "$image"
    fi
    "$CONTAINERD_BIN/ctr" --address "$socket" -n k8s.io images import "$archive" > /dev/null 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  [[ -z "$archive" ]] || rm -f "$archive"
  ((failed == 0)) || die "importing $image into the nodes' containerd failed"
}

# deploy/examples run public.ecr.aws/docker/library/debian:bookworm-slim; no registry is reachable
# here, so the debootstrapped bookworm stands in under that name and the examples run unchanged.
EXAMPLE_BASE_IMAGE="public.ecr.aws/docker/library/debian:bookworm-slim"
provide_example_base_image() {
  ensure_debian_base
  podman_has "$EXAMPLE_BASE_IMAGE" || podman tag docker.io/library/debian:bookworm-slim "$EXAMPLE_BASE_IMAGE"
  import_image "$EXAMPLE_BASE_IMAGE"
}
