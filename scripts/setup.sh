#!/usr/bin/env bash
# Create .venv, install Tickwork (and with --test what the suite needs), fetch htmx.
set -euo pipefail
cd "$(dirname "$0")/.."

HTMX_VERSION=4.0.1
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

# htmx comes from the npm registry at a pinned version and is served from webapp/static.
vendor=webapp/static/vendor
if [ ! -f "$vendor/htmx-$HTMX_VERSION.min.js" ]; then
  mkdir -p "$vendor"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack "htmx.org@$HTMX_VERSION" --silent >/dev/null)
  tar -xzf "$tmp/htmx.org-$HTMX_VERSION.tgz" -C "$tmp" package/dist/htmx.min.js
  cp "$tmp/package/dist/htmx.min.js" "$vendor/htmx-$HTMX_VERSION.min.js"
  cp "$vendor/htmx-$HTMX_VERSION.min.js" "$vendor/htmx.min.js"
  rm -rf "$tmp"
fi
