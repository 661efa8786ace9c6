#!/usr/bin/env bash
# Renders the chart's defaults into deploy/torus.yaml for `kubectl apply -f deploy/torus.yaml`
# (namespace kube-system), without the chart's hooks (helm test's pod, the post-delete clean-up: they
# run only under helm). A test fails when the two drift apart.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/get-helm.sh >/dev/null
build/tools/helm template torus helm/torus --namespace kube-system --no-hooks > deploy/torus.yaml
echo "deploy/torus.yaml: $(grep -c '^kind:' deploy/torus.yaml) objects"
