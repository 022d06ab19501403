"""A dispatcher process for the race test: build the app from the environment, connect, write
``ready-<pid>`` beside the start file, wait for the start file (which holds the Unix instant to start
at), run one ``dispatch-works`` pass, print its summary as JSON.

The test writes the start file once every racer is ready, so a slow start-up never lets one racer
finish before the others begin, and the shared instant lines their passes up. Each racer also steps
aside a random few milliseconds after each schedule it dispatches, as a busy process would: the racers
walk the same due list in the same order, and on SQLite the first to start would otherwise stay one
schedule ahead of the others (a writer that commits and begins again at once keeps the lock while the
others' busy handlers sleep) and win every one.
"""

import json
import os
import random
import sys
import time
from pathlib import Path


def main() -> None:
    start = Path(sys.argv[1])
    from sqlalchemy import text

    from jobs.works import dispatch_works_once
    from models.works import dispatcher

    dispatch = dispatcher.dispatch_schedule

    def dispatch_then_step_aside(*args, **kwargs):
        try:
            return dispatch(*args, **kwargs)
        finally:
            time.sleep(random.uniform(0.0, 0.01))

    dispatcher.dispatch_schedule = dispatch_then_step_aside
    from models.core.database import db
    from webapp import create_app

    app = create_app()
    with app.app_context():
        db.session.execute(text("SELECT 1"))
        db.session.rollback()
        start.with_name(f"ready-{os.getpid()}").write_text("ready")
        deadline = time.monotonic() + 60
        while not (start.exists() and start.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(max(0.0, float(start.read_text()) - time.time()))
        summary = dispatch_works_once()
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
