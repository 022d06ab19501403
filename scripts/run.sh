#!/usr/bin/env bash
# Start Tickwork on one box with SQLite and a demo workspace: http://127.0.0.1:5000
set -euo pipefail
umask 077  # the database, the queue, the secret key and backups: the owner's alone
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/tickwork db upgrade
.venv/bin/tickwork demo || echo "(the demo workspace is already loaded)"
exec .venv/bin/tickwork serve --host 127.0.0.1 --port "${PORT:-5000}"
