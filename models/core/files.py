"""Tickwork's own files are its own: folders 0700, files 0600.

The database, its WAL, the queue file, archives, backups and the generated secret key hold
everything a workspace has; nobody else on the box needs to read them. Every entry point
(the ``tickwork`` command, ``wsgi.py``, ``scripts/run.sh``) sets :data:`PRIVATE_UMASK` before
anything is created, so what SQLite and Huey create is private too; the folders and files
Tickwork makes itself are made private explicitly as well.
"""

import os
from pathlib import Path

PRIVATE_UMASK = 0o077
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def set_private_umask() -> None:
    """What this process creates from now on is readable by its owner only."""
    os.umask(PRIVATE_UMASK)


def make_private_dir(path: Path) -> Path:
    """``path`` (and any missing parent) as a folder; one made now is 0700."""
    path = Path(path)
    if not path.is_dir():
        path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    return path


def keep_private(path: Path) -> None:
    """Make the file ``path`` 0600 (a no-op when it does not exist)."""
    try:
        os.chmod(path, PRIVATE_FILE)
    except FileNotFoundError:
        pass
