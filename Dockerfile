# Torus node image: neuron-node-agent, neuron-ls and the other binaries in build/bin/.
#
#   docker build -t torus:dev .
#   docker build --build-arg SOURCE_URL=<repository URL> -t torus:dev .
#   podman build -t torus:dev .      (scripts/local-cluster.sh does this, with no registry)
#
# The package lists live in scripts/install-deps.sh only, so this file, CI and a developer
# machine always install the same versions from Debian bookworm.

# ---- build -----------------------------------------------------------------------------------
FROM debian:bookworm AS build
WORKDIR /src
# Dependencies first, so editing the sources does not invalidate this layer.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh --build
COPY . .
# .git is not in the build context (.dockerignore), so the binaries report commit "unknown".
# The same script CI runs, so the image's build steps are tested on every change. ccache's
# directory is a build cache (BuildKit and podman/buildah keep it between builds), so a rebuild
# after a small edit compiles only what changed.
RUN --mount=type=cache,target=/root/.cache/ccache,id=torus-ccache \
    CCACHE_DIR=/root/.cache/ccache scripts/build-release.sh build

# ---- runtime ---------------------------------------------------------------------------------
FROM debian:bookworm-slim
ARG SOURCE_URL=""
LABEL org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.title="torus" \
      org.opencontainers.image.description="Kubernetes node stack for AWS Neuron: node agent, scheduler extender, neuron-ls, kubectl-neuron" \
      org.opencontainers.image.licenses="Apache-2.0"

COPY scripts/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh --runtime \
 && rm -rf /var/lib/apt/lists/* /tmp/install-deps.sh

# Unprivileged user for the binaries that do not touch the driver: neuron-ls on a simulated
# tree and the scheduler extender, whose Deployment sets runAsUser: 65532.
RUN groupadd --gid 65532 torus \
 && useradd --uid 65532 --gid 65532 --no-log-init --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin torus

COPY --from=build /src/build/bin/ /usr/local/bin/

# The default user stays root on purpose, because the default entrypoint is the node agent: the
# Neuron driver creates core_count and connected_devices with mode 0400 (root can read them,
# nobody else can), and resetting a device between tenants means writing neuronN/reset, which the
# agent does before a container starts. Its DaemonSet mounts the host's /sys, /dev and /opt/aws.
# neuron-ls on a real node needs root for the same reason.
ENTRYPOINT ["/usr/local/bin/neuron-node-agent"]
