#!/usr/bin/env bash
# Prints the python of a private virtual environment with the benchmarks' plotting library
# (matplotlib from PyPI), made once and kept outside the repo, keyed by its version. Never
# installs anything system-wide.
#
#   py="$(scripts/bench-venv.sh)" && "$py" tests/bench/plot.py < spec.json
set -euo pipefail
source "$(dirname "$0")/cluster/versions.sh"  # TORUS_CACHE
MATPLOTLIB_VERSION=3.9.2
venv="$TORUS_CACHE/bench-venv-matplotlib-$MATPLOTLIB_VERSION"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import matplotlib' 2> /dev/null; then
  echo "bench-venv: installing matplotlib $MATPLOTLIB_VERSION into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv" ||
    { echo "bench-venv: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 2; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check "matplotlib==$MATPLOTLIB_VERSION" >&2
fi
echo "$venv/bin/python"
