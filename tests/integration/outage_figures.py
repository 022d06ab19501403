"""What the crash and outage tests injected and what came of it, for docs/reliability.md.

Each test calls :func:`record` with its counts (rows, sent, sent twice, lost, in doubt). They
are printed (``pytest -s`` shows them) and, when ``TICKWORK_RELIABILITY_DIR`` names a folder,
written there as ``<test>.json``, one file per test and backend, so a run's figures can be
collected into the table.
"""

import json
import os
import re
from pathlib import Path


def record(test: str, backend: str, **figures) -> dict:
    entry = {"test": test, "backend": backend, **figures}
    print(f"\nreliability figures: {json.dumps(entry, sort_keys=True)}")
    folder = os.environ.get("TICKWORK_RELIABILITY_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{test}-{backend}")
        (Path(folder) / f"{name}.json").write_text(json.dumps(entry, sort_keys=True, indent=2) + "\n")
    return entry
