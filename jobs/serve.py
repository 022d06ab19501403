"""``tickwork serve``: one box: a web process, a consumer process (or one per core), and a consumer
of the ``works`` queue (work generations, one worker by default).

A Huey consumer installs signal handlers, which only the main thread of a process may
do, so the consumer is a child process, not a thread. The supervisor restarts a child
that dies (waiting longer each time one dies young) and, on SIGINT or SIGTERM, stops
its children (SIGTERM, then SIGKILL after a grace period) and exits. A consumer drains its
sends in flight on SIGTERM for up to the provider timeout (jobs.consumer), so the grace
period is longer than that drain; the works consumer stops at once (a generation it cut
is freed by recovery).
"""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

GRACE_SECONDS = 15  # at least; more when the consumers' drain is longer (see for_single_box)
POLL_SECONDS = 0.5
MAX_RESTART_DELAY = 30.0
APP = "webapp:create_app()"
ACCESS_LOGGER = "webapp.access_log.GunicornAccessLogger"  # public routes' tokens redacted


@dataclass
class Child:
    name: str
    argv: list[str]
    process: subprocess.Popen | None = None
    started: float = 0.0
    restart_delay: float = 0.5
    restarts: int = 0

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, start_new_session=True)
        self.started = time.monotonic()
        _say(f"{self.name} started (pid {self.process.pid})")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class Supervisor:
    children: list[Child]
    stopping: bool = field(default=False)
    grace: float = GRACE_SECONDS

    @classmethod
    def for_single_box(cls, *, host: str, port: int, web_workers: int = 2, consumer_workers: int = 4,
                       consumers: int = 1, works_workers: int = 1, drain: float = 0.0) -> "Supervisor":
        """A web child, ``consumers`` consumer children (only the first enqueues the clock jobs; any
        may, safely; one is enough on one box) and a consumer of the ``works`` queue, so a long
        work generation never holds up a send. ``drain`` is how long a consumer may take to stop
        (jobs.consumer.drain_seconds); the children get that and five seconds before SIGKILL."""
        if consumers < 1:
            raise ValueError("serve needs at least one consumer")
        python = sys.executable
        web = [python, "-m", "gunicorn", APP, "--bind", f"{host}:{port}", "--workers", str(web_workers),
               "--graceful-timeout", "10", "--access-logfile", "-", "--logger-class", ACCESS_LOGGER]
        consumer = [python, "-m", "flask", "--app", APP, "consumer", "--workers", str(consumer_workers)]
        children = [Child("web", web), Child("consumer", consumer)]
        children += [Child(f"consumer-{n}", [*consumer, "--no-periodic"]) for n in range(2, consumers + 1)]
        children.append(Child("works-consumer", [python, "-m", "flask", "--app", APP, "consumer", "--queue", "works",
                                                 "--workers", str(works_workers), "--no-periodic"]))
        return cls(children, grace=max(GRACE_SECONDS, drain + 5))

    def _on_signal(self, signum, _frame):
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        for child in self.children:
            child.start()
        while not self.stopping:
            time.sleep(POLL_SECONDS)
            for child in self.children:
                if self.stopping or child.alive():
                    continue
                code = child.process.returncode
                lived = time.monotonic() - child.started
                # A child that dies young is restarted after a growing delay, so a broken
                # configuration does not spin; one that ran a while is restarted at once.
                child.restart_delay = 0.5 if lived > 60 else min(child.restart_delay * 2, MAX_RESTART_DELAY)
                _say(f"{child.name} exited with {code}; restarting in {child.restart_delay:g}s")
                deadline = time.monotonic() + child.restart_delay
                while not self.stopping and time.monotonic() < deadline:
                    time.sleep(0.1)
                if not self.stopping:
                    child.restarts += 1
                    child.start()
        return self.stop()

    def stop(self) -> int:
        _say("stopping")
        for child in self.children:
            if child.alive():
                child.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for child in self.children:
            if child.process is None:
                continue
            try:
                child.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                _say(f"{child.name} did not stop within {self.grace:g}s; killing it")
                os.killpg(child.process.pid, signal.SIGKILL)
                child.process.wait()
        _say("stopped")
        return 0


def _say(message: str) -> None:
    print(f"tickwork serve: {message}", file=sys.stderr, flush=True)
