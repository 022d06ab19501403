"""Drip-advance passes in a process of its own, each started at one instant in every racer, so they really race.

    python -m tests.integration.drip_racer FOLDER PASSES [BATCH]

Before each pass ``i`` the racer writes ``FOLDER/ready<i>-<pid>`` and waits for ``FOLDER/go<i>``,
which holds the instant (Unix time) the pass starts at; the test writes it once every racer is
ready. The app comes from the environment (TICKWORK_DATABASE_URL, ...), as ``tickwork
drip-advance`` builds it, and each pass is the function that command and the periodic task run.
Each summary is printed as a JSON line. ``BATCH`` shrinks the pass's batches (``models.drips.advance.BATCH``)
so that a few hundred enrollments make many short write transactions for the racers to interleave, as
thousands would in production. Each racer steps aside for 40 to 120 ms after each batch's commit, as
the hand-off to the queue and other work do in production: otherwise the racer that starts first stays
a batch ahead of the others on SQLite (a writer that commits and begins again at once keeps the lock
while the others' busy handlers sleep, up to 100 ms between tries) and wins every batch, as it did on
a loaded box when the pause was under 30 ms.
"""

import json
import os
import random
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import text


def _wait_for(go: Path) -> None:
    while not go.exists() or not go.read_text().strip():
        time.sleep(0.02)
    time.sleep(max(0.0, float(go.read_text()) - time.time()))


def main() -> None:
    folder, passes = Path(sys.argv[1]), int(sys.argv[2])
    from jobs.clock import drip_advance_once
    from models.drips import advance

    if len(sys.argv) > 3:
        advance.BATCH = int(sys.argv[3])
    committing = advance.write_session

    @contextmanager
    def write_then_step_aside(*args, **kwargs):
        with committing(*args, **kwargs) as session:
            yield session
        time.sleep(random.uniform(0.04, 0.12))

    advance.write_session = write_then_step_aside
    from models.core.database import db
    from webapp import create_app

    app = create_app()
    with app.app_context():
        with db.engine.connect() as conn:  # connected and warm before the start, so the passes overlap
            conn.execute(text("SELECT 1"))
        for index in range(passes):
            (folder / f"ready{index}-{os.getpid()}").write_text("ready")
            _wait_for(folder / f"go{index}")
            print(json.dumps(drip_advance_once(), default=str), flush=True)


if __name__ == "__main__":
    main()
