#!/usr/bin/env bash
# Start Tickwork on one box with SQLite and a demo workspace: http://127.0.0.1:5000 (PORT=8080 for another).
set -euo pipefail
umask 077  # the database, the queue, the secret key and backups: the owner's alone
cd "$(dirname "$0")/.."
scripts/setup.sh
PORT=${PORT:-5000}
# The address links are made with (the demo's email campaign, the calendar feed, unsubscribe
# links); set TICKWORK_BASE_URL yourself when the box is reached by another name.
export TICKWORK_BASE_URL=${TICKWORK_BASE_URL:-http://127.0.0.1:$PORT}
.venv/bin/tickwork db upgrade
.venv/bin/tickwork demo  # the sign-in, the first time and every time after
exec .venv/bin/tickwork serve --host 127.0.0.1 --port "$PORT"
