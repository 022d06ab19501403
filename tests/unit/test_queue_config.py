"""TICKWORK_QUEUE_URL → Huey storage, and HTTP answers → provider outcomes; no database, no network."""

from datetime import datetime, timezone

import httpx
import pytest
from huey.storage import RedisStorage

from jobs.queue import QueuePostgresStorage, QueueSqliteStorage

from jobs.queue import TickworkHuey, storage_for
from models.channels.providers.base import SendContext, SendOutcome
from models.channels.providers.http import classify


@pytest.mark.parametrize("url,storage,kwargs", [
    ("sqlite:////srv/tickwork/queue.db", QueueSqliteStorage, {"filename": "/srv/tickwork/queue.db", "timeout": 10}),
    ("postgresql://app@db/tickwork", QueuePostgresStorage, {"dsn": "postgresql://app@db/tickwork"}),
    ("postgresql+psycopg://app@db/tickwork", QueuePostgresStorage, {"dsn": "postgresql://app@db/tickwork"}),
    ("redis://cache:6379/0", RedisStorage, {"url": "redis://cache:6379/0"}),
    ("immediate", None, {}),
])
def test_the_queue_url_chooses_the_storage(url, storage, kwargs):
    assert storage_for(url) == (storage, kwargs)


@pytest.mark.parametrize("url", ["mysql://x/y", "sqlite://", "nonsense"])
def test_an_unknown_queue_url_is_refused_with_the_choices(url):
    with pytest.raises(ValueError, match="expected sqlite|needs a file"):
        storage_for(url)


def test_configuring_a_queue_opens_nothing_until_first_use(tmp_path):
    queue = TickworkHuey("probe")
    path = tmp_path / "queue.db"
    queue.configure(f"sqlite:///{path}")
    assert not queue.immediate and not path.exists()
    assert len(queue) == 0
    assert path.exists()
    queue.storage.close()


CONTEXT = SendContext(now=datetime(2026, 6, 1, tzinfo=timezone.utc), timeout=5)


@pytest.mark.parametrize("status,outcome", [
    (200, None), (201, None), (202, None),
    (429, SendOutcome.RETRY_LATER), (503, SendOutcome.RETRY_LATER),
    (500, SendOutcome.UNKNOWN), (502, SendOutcome.UNKNOWN), (504, SendOutcome.UNKNOWN),
    (400, SendOutcome.PERMANENT), (401, SendOutcome.PERMANENT), (404, SendOutcome.PERMANENT),
    (422, SendOutcome.PERMANENT), (301, SendOutcome.PERMANENT),
])
def test_each_response_class_maps_to_one_outcome(status, outcome):
    result = classify(httpx.Response(status, json={"message": "words"}), CONTEXT, what="P")
    assert (result.outcome if result else None) == outcome


def test_retry_later_carries_the_retry_after():
    result = classify(httpx.Response(429, headers={"Retry-After": "90"}), CONTEXT, what="P")
    assert result.retry_after.total_seconds() == 90


@pytest.mark.parametrize("database,queue", [
    ("postgresql://app@db/tickwork", "postgresql://app@db/tickwork"),
    ("sqlite:////srv/tickwork/app.db", "sqlite:////srv/tickwork/tickwork-queue.db"),
    (None, "sqlite:////instance/tickwork-queue.db"),
])
def test_the_queue_defaults_to_the_app_database_or_a_file_beside_it(monkeypatch, database, queue):
    from webapp.config import default_settings

    monkeypatch.delenv("TICKWORK_QUEUE_URL", raising=False)
    if database:
        monkeypatch.setenv("TICKWORK_DATABASE_URL", database)
    else:
        monkeypatch.delenv("TICKWORK_DATABASE_URL", raising=False)
    assert default_settings("/instance")["TICKWORK_QUEUE_URL"] == queue


def test_bulk_enqueue_is_used_only_with_the_huey_release_it_was_written_for(tmp_path, monkeypatch):
    import huey as huey_package

    from jobs.queue import BULK_ENQUEUE_WRITTEN_FOR

    written_for = TickworkHuey("probe")
    written_for.configure(f"sqlite:///{tmp_path / 'a.db'}")
    assert written_for.bulk_enqueue is (huey_package.__version__ == BULK_ENQUEUE_WRITTEN_FOR)

    monkeypatch.setattr(huey_package, "__version__", "9.0.0")
    other = TickworkHuey("probe")
    other.configure(f"sqlite:///{tmp_path / 'b.db'}")
    assert other.bulk_enqueue is False

    @other.task()
    def probe_task():
        """A task to enqueue."""

    other.enqueue_many([probe_task.s(), probe_task.s()])  # Huey's own enqueue, one by one
    assert len(other) == 2
    other.storage.close()
