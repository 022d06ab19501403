"""The clock-driven shell: Huey tasks that run one domain function each, inside the app.

``jobs.queue.huey`` is the one Huey instance; :func:`init_app` points it at the app's
``TICKWORK_QUEUE_URL`` (nothing connects until a task is enqueued or a consumer starts),
binds the app for task bodies, and installs the runtime's ``on_due_soon`` hook so that a
write making a row due before the next tick hands it to the queue with an ``eta``.
Importing this package imports every task module, so a consumer sees them all.

- The clock jobs and their cadences: :mod:`jobs.periodic`.
- One pass of a job now (tests, the CLI): :func:`jobs.clock.tick_once`.
- The dispatch task: :mod:`jobs.tasks`; the work generation task: :mod:`jobs.works`.
"""

from flask import Flask

from jobs import periodic, tasks, works
from jobs.queue import bind_app, configure_queues, huey

__all__ = ["huey", "init_app"]


def init_app(app: Flask) -> None:
    from models.core.errors import ConfigurationError

    try:
        configure_queues(app.config["TICKWORK_QUEUE_URL"])
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    bind_app(app)
    periodic.register_periodic_tasks()
    hooks = app.extensions["tickwork"].on_due_soon
    if tasks.announce_due_soon not in hooks:
        hooks.append(tasks.announce_due_soon)
    works.init_app(app)
