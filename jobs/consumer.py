"""``tickwork consumer``: a Huey consumer in the main thread, with a heartbeat beside it.

``--queue works`` consumes the ``works`` queue (work generations) instead of the default one
(the clock jobs and the sends); its heartbeat is named ``host:pid:works``.

Stopping. Huey stops at once on SIGTERM (only SIGINT is graceful), and a send cut at once is
a row in doubt ("worker lost; outcome unknown"). Process managers send SIGTERM, so the
default queue's consumer treats SIGTERM as SIGINT: it claims no more rows (they stay queued
for the next tick), lets the sends in flight finish and record their outcomes for up to
:func:`drain_seconds` (the provider timeout and a few seconds for the writes), then exits
0. A second signal stops it at once. The ``works`` consumer keeps Huey's behaviour: a
generation may run for many minutes, so it is not waited for; recovery frees a work left
generating (``work_stuck_timeout``).
"""

import logging
import os
import signal
import socket
import threading

from flask import Flask
from huey.consumer import Consumer
from huey.storage import SqliteStorage

from jobs.queue import QUEUES, huey
from jobs.tasks import draining
from models.clock import heartbeats
from models.core.policy import Policy
from models.core.runtime import runtime

log = logging.getLogger("tickwork.consumer")

# SqliteHuey cannot be woken; it polls. Huey backs its polling off to 10 s by default,
# which would make an eta task up to 10 s late. Poll often and cheaply instead.
SQLITE_POLLING = {"initial_delay": 0.05, "backoff": 1.1, "max_delay": 0.2}
# PostgresHuey and RedisHuey block on LISTEN / BLPOP, so their delay matters little.
BLOCKING_POLLING = {"initial_delay": 0.1, "backoff": 1.15, "max_delay": 1.0}


def consumer_options(workers: int, periodic: bool, queue=huey) -> dict:
    polling = SQLITE_POLLING if isinstance(queue.storage, SqliteStorage) else BLOCKING_POLLING
    return dict(workers=workers, periodic=periodic, worker_type="thread", scheduler_interval=1,
                check_worker_health=True, health_check_interval=5, **polling)


# After the provider call, a send records its outcome in one or two short writes.
OUTCOME_WRITES_SECONDS = 5.0


def drain_seconds(policy: Policy) -> float:
    """How long a stopping consumer waits for its sends in flight: the provider timeout, then the outcome's writes."""
    return policy.provider_timeout.total_seconds() + OUTCOME_WRITES_SECONDS


class DrainingConsumer(Consumer):
    """A Huey consumer for which SIGTERM, like SIGINT, is a graceful stop that drains the sends in flight."""

    def __init__(self, huey, *, drain_seconds: float, **options):
        super().__init__(huey, shutdown_timeout=drain_seconds, **options)
        self._signal_actions[signal.SIGTERM] = (False, True)  # (restart, graceful), as Huey's SIGINT

    def stop(self, graceful=False):
        draining.set()  # before the workers are joined: no dispatch claims another row
        super().stop(graceful=graceful)


class Heartbeat(threading.Thread):
    """Writes this consumer's heartbeat row every few seconds until stopped."""

    def __init__(self, app: Flask, name: str):
        super().__init__(name="tickwork-heartbeat", daemon=True)
        self.app, self.consumer_name = app, name
        self.stopping = threading.Event()
        with app.app_context():
            self.started_at = runtime().now()

    def run(self):
        interval = heartbeats.HEARTBEAT_INTERVAL.total_seconds()
        while not self.stopping.is_set():
            try:
                self.beat()
            except Exception:  # a busy database must not stop the consumer; the next beat retries
                log.exception("heartbeat %s not written", self.consumer_name)
            self.stopping.wait(interval)

    def beat(self):
        with self.app.app_context():
            heartbeats.beat(self.consumer_name, host=socket.gethostname(), pid=os.getpid(),
                            started_at=self.started_at, now=runtime().now())

    def stop(self):
        self.stopping.set()
        self.join(timeout=5)
        with self.app.app_context():
            heartbeats.forget(self.consumer_name)


def run_consumer(app: Flask, *, workers: int = 4, periodic: bool = True, name: str | None = None,
                 queue: str = "default") -> None:
    """Run until SIGINT or SIGTERM: the default queue drains its sends in flight (see the module docstring),
    the works queue stops at once on SIGTERM."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # httpx and httpcore log every request at INFO: a line per send, a good part of a send's CPU.
    for chatty in ("httpx", "httpcore"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    name = name or f"{socket.gethostname()}:{os.getpid()}" + ("" if queue == "default" else f":{queue}")
    heartbeat = Heartbeat(app, name)
    heartbeat.beat()
    heartbeat.start()
    consumed = QUEUES[queue]
    options = consumer_options(workers, periodic and queue == "default", consumed)
    if queue == "default":
        with app.app_context():
            drain = drain_seconds(runtime().policy)
        consumer = DrainingConsumer(consumed, drain_seconds=drain, **options)
    else:
        consumer = consumed.create_consumer(**options)
    try:
        consumer.run()
    finally:
        heartbeat.stop()
