"""The grammar of ``TICKWORK_QUEUE_URL``: which storage a URL names, and its arguments.

Plain string work, so a command that never touches the queue still refuses a bad URL at start
without importing Huey; the storage classes themselves are the clock's shell's (``jobs.queue``).
"""

from urllib.parse import urlsplit

IMMEDIATE = "immediate"


def queue_storage(queue_url: str) -> tuple[str | None, dict]:
    """``(kind, arguments)`` for a queue URL, kind ``sqlite``, ``postgresql`` or ``redis``; ``(None, {})`` means
    immediate mode; ValueError naming the setting for anything else."""
    if queue_url == IMMEDIATE:
        return None, {}
    scheme = urlsplit(queue_url).scheme.split("+", 1)[0]
    if scheme == "sqlite":
        path = queue_url.split(":///", 1)[1] if ":///" in queue_url else ""
        if not path:
            raise ValueError("a sqlite queue URL needs a file: sqlite:///path/to/queue.db")
        return "sqlite", {"filename": path, "timeout": 10}
    if scheme in ("postgresql", "postgres"):
        return "postgresql", {"dsn": "postgresql://" + queue_url.split("://", 1)[1]}
    if scheme in ("redis", "rediss"):
        return "redis", {"url": queue_url}
    raise ValueError(f"TICKWORK_QUEUE_URL {queue_url!r}: expected sqlite:///..., postgresql://..., redis://... "
                     "or immediate")
