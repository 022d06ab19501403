"""A dispatcher process for the race test: build the app from the environment, connect, wait for the
start signal (a file appearing), run one ``dispatch-works`` pass, print its summary as JSON.

Waiting on the file lines the racers up after their slow start-up, so their passes overlap.
"""

import json
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
        deadline = time.monotonic() + 60
        while not start.exists() and time.monotonic() < deadline:
            time.sleep(0.002)
        summary = dispatch_works_once()
    print(json.dumps(summary, default=str))


if __name__ == "__main__":
    main()
