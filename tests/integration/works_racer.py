"""A dispatcher process for the race test: build the app from the environment, connect, write
``ready-<pid>`` beside the start file, wait for the start file (which holds the Unix instant to start
at), run one ``dispatch-works`` pass, print its summary as JSON.

The test writes the start file once every racer is ready, so a slow start-up never lets one racer
finish before the others begin, and the shared instant lines their passes up.
"""

import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    start = Path(sys.argv[1])
    from sqlalchemy import text

    from jobs.works import dispatch_works_once
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
