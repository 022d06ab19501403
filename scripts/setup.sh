#!/usr/bin/env bash
# Create .venv, install Tickwork (and with --test what the suite needs), fetch the dashboard's assets.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# pip runs only when what it installs from changed: the project's files and the extra asked for.
# A second run of scripts/run.sh then starts in seconds, not the best part of a minute.
EXTRA=""
[ "${1:-}" = "--test" ] && EXTRA="[test]"
STAMP=.venv/.tickwork-installed
WANT="$(cat pyproject.toml setup.py | sha256sum | cut -d' ' -f1)$EXTRA"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".$EXTRA"
  echo "$WANT" > "$STAMP"
fi

# htmx (and any other pinned asset in webapp/assets.toml) comes from the npm registry's
# tarball, checked against its pinned sha512; no npm needed. A no-op when already in place.
.venv/bin/tickwork assets
