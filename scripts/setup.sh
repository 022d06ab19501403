#!/usr/bin/env bash
# Create .venv, install Tickwork (and with --test what the suite needs), fetch the dashboard's assets.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if [ "${1:-}" = "--test" ]; then
  .venv/bin/python -m pip install --quiet -e '.[test]'
else
  .venv/bin/python -m pip install --quiet -e .
fi

# htmx (and any other pinned asset in webapp/assets.toml) comes from the npm registry's
# tarball, checked against its pinned sha512; no npm needed. A no-op when already in place.
.venv/bin/tickwork assets
