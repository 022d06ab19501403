"""A tick in a process of its own for the race test, started at one instant in every racer, so they really race.

    python -m tests.integration.clock_racer FOLDER [TICKS]

The racer builds the app from the environment (TICKWORK_DATABASE_URL, ...) as ``tickwork tick``
does, connects, writes ``FOLDER/ready-<pid>`` and waits for ``FOLDER/go``, which holds the
instant (Unix time) to start at; the test writes it once every racer is ready. It then runs one
tick (the function ``tickwork tick`` and the periodic task run), or TICKS of them back to back, and
prints the last one's summary as JSON.
"""

import json
import os
import sys
import time
from pathlib import Path

from sqlalchemy import text


def main() -> None:
    folder = Path(sys.argv[1])
    from jobs.clock import tick_once
    from models.core.database import db
    from webapp import create_app

    app = create_app()
    with app.app_context():
        with db.engine.connect() as conn:  # connected and warm before the start, so the ticks overlap
            conn.execute(text("SELECT 1"))
        (folder / f"ready-{os.getpid()}").write_text("ready")
        go = folder / "go"
        deadline = time.monotonic() + 60
        while not (go.exists() and go.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(max(0.0, float(go.read_text()) - time.time()))
        for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1):
            summary = tick_once()
    print(json.dumps(summary, default=str), flush=True)


if __name__ == "__main__":
    main()
