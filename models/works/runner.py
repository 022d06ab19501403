"""One generation, as the ``works`` queue's task runs it: look, call the pipeline, record the outcome.

1. A look at the run, its work and the plugins it chose (no transaction held). A run that
   is no longer ``running`` (recovered, already ended) is left alone.
2. The pipeline plugin's ``run(generation)``, with no transaction open: it may take minutes.
   A plugin that is not installed any more, or that raises, fails the run with words an
   operator understands, never a crash of the worker.
3. One short write transaction: ``waiting`` (an outside system took it; its callback ends
   the run) or the outcome, by :func:`models.works.runs.record_outcome`.
"""

import logging

from sqlalchemy import select

from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.core.secrets_box import SecretUnreadable
from models.works import generation
from models.works.context import WorksContext
from models.works.pipelines import Generation, PipelineResult
from models.works.plugins import installed_plugins
from models.works.runs import record_outcome
from models.works.tables import RunStatus, Work, WorkRun

log = logging.getLogger("tickwork.works")
JOB = "generate"


def _plugins_problem(run: WorkRun, registry) -> str | None:
    """Why the run's chosen plugins cannot be used now, or None."""
    for capability, plugin_id in sorted(run.providers.items()):
        plugin = registry.get(plugin_id)
        if plugin is None:
            return f"the {capability} plugin {plugin_id!r} chosen for this work is not installed any more"
        if not plugin.usable:
            return f"the {capability} plugin {plugin_id!r} chosen for this work {plugin.error}"
        if plugin.capability != capability:
            return f"the plugin {plugin_id!r} chosen as {capability} is now a {plugin.capability} plugin"
    if run.pipeline not in registry:
        return f"the pipeline plugin {run.pipeline!r} is not installed any more"
    return None


def run_generation(run_id: int, context: WorksContext) -> str:
    """Run generation ``run_id`` to its end (or to ``waiting``); returns what became of it."""
    actor = Actor.job(JOB)
    with read_session(context.engine) as session:
        found = session.execute(select(WorkRun, Work).join(Work, Work.id == WorkRun.work_id)
                                .where(WorkRun.id == run_id)).one_or_none()
        session.expunge_all()
    if found is None:
        return "skipped:not_found"
    run, work = found
    if run.status != RunStatus.RUNNING.value:
        return f"skipped:{run.status}"
    registry = installed_plugins()
    problem = _plugins_problem(run, registry)
    secret = None
    if problem is None and work.secret_sealed:
        try:
            secret = context.secret_box.open(work.secret_sealed)
        except SecretUnreadable:
            problem = "the work's secret cannot be read (was TICKWORK_SECRET_KEY changed?)"
    if problem is not None:
        result = PipelineResult.failed(problem)
    else:
        result = _call_pipeline(registry[run.pipeline].target, Generation(
            work_id=work.id, work_name=work.name, workspace_id=work.workspace_id, run_id=run.id, run_kind=run.kind,
            token=run.token, slot=run.slot, settings=dict(work.settings or {}),
            providers={cap: pid for cap, pid in run.providers.items() if cap != "pipeline"},
            provider_targets={cap: registry[pid].target for cap, pid in run.providers.items() if cap != "pipeline"},
            secret=secret, callback_url=context.callback_url(run.token), timeout=context.policy.work_pipeline_timeout,
        ), run.pipeline)
    with write_session(context.engine) as session:
        now = context.clock.now()
        if result.status == PipelineResult.WAITING:
            moved = generation.hand_off(session, run, deadline_at=now + context.policy.work_pipeline_timeout, now=now,
                                        actor=actor)
            return "waiting" if moved.ok else f"skipped:{moved.status}"
        ended = record_outcome(session, run.token, succeeded=result.status == PipelineResult.GENERATED,
                               error=result.error, now=now, actor=actor, context=context)
    context.announce(ended.actions)
    if not ended.recorded:
        return f"skipped:{ended.run.status}"
    return ended.run.status


def _call_pipeline(pipeline, generation_: Generation, pipeline_id: str) -> PipelineResult:
    """The pipeline's answer; an exception or a malformed answer is a failure in words, logged in full."""
    try:
        result = pipeline.run(generation_)
    except Exception as exc:  # third-party code: its failure is the run's, never the worker's
        log.exception("work %s run %s: the %s pipeline raised", generation_.work_id, generation_.run_id, pipeline_id)
        return PipelineResult.failed(f"the {pipeline_id} pipeline raised {type(exc).__name__}: {exc}"[:2000])
    if not isinstance(result, PipelineResult) or result.status not in (
            PipelineResult.GENERATED, PipelineResult.ERROR, PipelineResult.WAITING):
        return PipelineResult.failed(f"the {pipeline_id} pipeline answered {result!r}, not a PipelineResult")
    return result
