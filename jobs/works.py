"""The works wing's shell on the clock side: the generation task on the ``works`` queue, the
dispatcher's one pass, and the context both shells hand the wing.

A generation may run for minutes, so it runs on ``works_huey`` (the ``works`` queue), whose
consumers are its own (``tickwork consumer --queue works``); the dispatcher itself is a
cheap clock job on the main queue that only claims and hands over.
"""

from flask import Flask, current_app

from jobs.queue import task_app, works_huey
from models.core.errors import ConfigurationError
from models.core.runtime import runtime
from models.works.context import WorksContext
from models.works.dispatcher import run_dispatcher
from models.works.plans import parse_plans
from models.works.runner import run_generation

EXTENSION = "tickwork.works"


@works_huey.task(name="generate_work")
def generate_work(run_id: int):
    """Run one work generation to its end, or to waiting for its callback (models.works.runner)."""
    with task_app().app_context():
        return run_generation(run_id, works_context())


def hand_off_runs(run_ids: list[int]) -> None:
    """Queue a generation task per run on the works queue (inline in immediate mode)."""
    works_huey.enqueue_many([generate_work.s(run_id) for run_id in run_ids])


def works_context(**overrides) -> WorksContext:
    """The wing's context for the current app: its clock, policy, plans, public address and queues."""
    rt = runtime()
    settings = current_app.extensions[EXTENSION]
    values = dict(clock=rt.clock, policy=rt.policy, plans=settings["plans"], secret_box=rt.secret_box,
                  base_url=settings["base_url"], hand_off=hand_off_runs, announce=rt.announce_due)
    values.update(overrides)
    return WorksContext(**values)


def dispatch_works_once() -> dict:
    """One work-schedule dispatcher pass: recover, then claim and hand over every due schedule (a batch)."""
    return run_dispatcher(works_context())


def init_app(app: Flask) -> None:
    """Read the plans and the public address once, at start-up; a bad TICKWORK_PLANS_JSON stops it."""
    try:
        plans = parse_plans(app.config.get("TICKWORK_PLANS_JSON"))
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    base_url = (app.config.get("TICKWORK_BASE_URL") or "").strip().rstrip("/") or None
    if base_url and not base_url.startswith(("http://", "https://")):
        raise ConfigurationError(f"TICKWORK_BASE_URL {base_url!r}: expected the public address, like "
                                 "https://tickwork.example.com")
    app.extensions[EXTENSION] = {"plans": plans, "base_url": base_url}
