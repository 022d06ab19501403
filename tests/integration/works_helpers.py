"""Helpers for the works wing's tests: works through the API, dispatcher passes, runs stepped by hand."""

import textwrap
from pathlib import Path

from sqlalchemy import func, select

from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.works.tables import Work, WorkEvent, WorkRun, WorkSchedule, WorkUsage

TEST_BASE_URL = "https://tickwork.test"


def create_work(client, world, *, name="Digest", pipeline="log", settings=None, role="ops") -> int:
    body = {"name": name, "pipeline": pipeline}
    if settings is not None:
        body["settings"] = settings
    answer = client.post("/api/v1/works", json=body, headers=world.auth(role))
    assert answer.status_code == 201, answer.json
    return answer.json["id"]


def put_schedule(client, world, work_id: int, role="ops", **body):
    return client.put(f"/api/works/{work_id}/schedule", json=body, headers=world.auth(role))


CALENDAR = ("daily", "weekly", "monthly")


def scheduled_work(client, world, *, cadence="daily", settings=None, **body) -> int:
    """A work with an active schedule; a calendar one names 09:00 (at T0, 08:00 in New York, its first slot is
    13:00Z today), so the tests of what follows a slot share one. ``time=None`` leaves the rule's first slot."""
    if cadence in CALENDAR:
        body.setdefault("time", "09:00")
    body = {key: value for key, value in body.items() if value is not None}
    work_id = create_work(client, world, settings=settings)
    answer = put_schedule(client, world, work_id, cadence=cadence, **body)
    assert answer.status_code == 201, answer.json
    return work_id


def set_plan(app, workspace_id: int, plan: str) -> None:
    from models.accounts.tables import Workspace

    with app.app_context(), write_session() as session:
        session.get(Workspace, workspace_id).plan = plan


class Dispatcher:
    """Runs dispatcher passes in the app; generations are collected, then run (or not) by the test."""

    def __init__(self, app, **policy):
        self.app = app
        self.handed: list[int] = []
        self.policy = policy

    def context(self):
        from dataclasses import replace

        from jobs.works import works_context
        from models.core.runtime import runtime

        return works_context(hand_off=self.handed.extend, policy=replace(runtime().policy, **self.policy))

    def pass_(self, *, run: bool = True) -> dict:
        """One recorded pass; with ``run`` every generation it handed over runs now, inline."""
        from models.works.dispatcher import run_dispatcher

        with self.app.app_context():
            summary = run_dispatcher(self.context())
        if run:
            self.run_handed()
        return summary

    def run_handed(self) -> list[str]:
        from models.works.runner import run_generation

        results = []
        with self.app.app_context():
            while self.handed:
                results.append(run_generation(self.handed.pop(0), self.context()))
        return results

    def end(self, run_id: int, *, succeeded: bool, error: str | None = None):
        """End a run as its pipeline would have."""
        from models.works.runs import record_outcome

        with self.app.app_context(), write_session() as session:
            token = session.get(WorkRun, run_id).token
            return record_outcome(session, token, succeeded=succeeded, error=error or "the pipeline said no",
                                  now=self.context().clock.now(), actor=Actor(label="test"), context=self.context())


def run_now_held(dispatcher: "Dispatcher", world, work_id: int, role: str = "ops") -> int:
    """Run Now through the domain, its generation held back (in ``dispatcher.handed``); returns the run id."""
    from models.accounts.tables import Role
    from models.works.operations import run_now

    with dispatcher.app.app_context(), write_session() as session:
        context = dispatcher.context()
        change = run_now(session, world.workspace_id, work_id, actor=Actor(label="test"), role=Role(role),
                         now=context.clock.now(), context=context)
        run_id = change.runs[0].id
    dispatcher.handed.append(run_id)
    return run_id


def schedule_row(app, work_id: int) -> WorkSchedule | None:
    with app.app_context(), read_session() as session:
        return session.scalar(select(WorkSchedule).where(WorkSchedule.work_id == work_id))


def work_row(app, work_id: int) -> Work:
    with app.app_context(), read_session() as session:
        return session.get(Work, work_id)


def runs(app, work_id: int) -> list[WorkRun]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(WorkRun).where(WorkRun.work_id == work_id).order_by(WorkRun.id)))


def usage_rows(app, work_id: int) -> list[WorkUsage]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(WorkUsage).where(WorkUsage.work_id == work_id).order_by(WorkUsage.id)))


def events(app, work_id: int, lifecycle: str | None = None) -> list[WorkEvent]:
    with app.app_context(), read_session() as session:
        query = select(WorkEvent).where(WorkEvent.work_id == work_id).order_by(WorkEvent.id)
        if lifecycle:
            query = query.where(WorkEvent.lifecycle == lifecycle)
        return list(session.scalars(query))


def count(app, model, *where) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(model).where(*where))


PLUGIN_MODULE = '''
"""Plugins of a distribution installed for the tests, found through its entry points."""

from models.works.pipelines import PipelineResult


class SearchPlugin:
    capability = "search"
    description = "Searches the web the Acme way"


class AiPlugin:
    capability = "ai"
    description = "Writes summaries"


class Pipeline:
    capability = "pipeline"
    description = "Generates with the chosen search plugin"

    @staticmethod
    def run(generation):
        if generation.providers.get("search") != "acme-search":
            return PipelineResult.failed("acme-pipeline wants the acme-search plugin")
        return PipelineResult.generated()


class NoCapability:
    description = "Forgot to say what it does"
'''


def install_plugin_distribution(site: Path, name: str = "acme_tickwork") -> Path:
    """A real distribution on disk: a module and a ``.dist-info`` whose entry points name its plugins.

    Put ``site`` on ``sys.path`` (``monkeypatch.syspath_prepend``) and ``importlib.metadata``
    finds it exactly as it finds a wheel installed into the venv.
    """
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{name}.py").write_text(PLUGIN_MODULE)
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [tickwork.plugins]
        acme-search = {name}:SearchPlugin
        acme-ai = {name}:AiPlugin
        acme-pipeline = {name}:Pipeline
        acme-vague = {name}:NoCapability
        acme-missing = {name}_not_there:Plugin
        log = {name}:SearchPlugin
        """))
    (info / "RECORD").write_text("")
    return site
