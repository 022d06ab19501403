#!/usr/bin/env bash
# Install what the tests need and run the whole suite on SQLite and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test

# Chromium for the browser tests, from Debian's packages (Playwright drives it).
if ! command -v chromium >/dev/null 2>&1; then
  (apt-get install -y -q chromium >/dev/null 2>&1) || (apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null)
fi

# promtool for the Prometheus kit's tests (docs/ops/), from Debian's prometheus package: the only one that ships it.
if ! command -v promtool >/dev/null 2>&1; then
  (apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1) \
    || (apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends prometheus >/dev/null)
fi

# PostgreSQL on 127.0.0.1:5432 (trust auth); start it when it is not running.
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi

# The house's shape: the import contracts in pyproject.toml (layers, no loops).
.venv/bin/lint-imports --no-logo

# Two workers (pytest-xdist); one that runs out of tests takes some of the other's (worksteal).
set +e
.venv/bin/python -m pytest -n "${TICKWORK_TEST_WORKERS:-2}" --dist worksteal "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$status"
