"""Works on the dashboard: the list, a work's page with its schedule form, Run Now, pause and resume,
its run history, the plugin registry and the usage ledger.

Every rule lives in :mod:`models.works`; these views parse the form, call it, and render. A
refused change (a cadence outside the plan, a run already going, a role missing) comes back
as the schedule card or the run card re-rendered with the refusal written on it.
"""

from flask import Blueprint, flash, redirect, render_template, request, url_for

from jobs.works import works_context
from models.accounts.permissions import Permission
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput
from models.timing.cadence import WEEKDAYS, Cadence, grid_in_words
from models.works.access import may_edit_works
from models.works.operations import create_work, delete_work, put_schedule, run_now
from models.works.plugins import installed_plugins, usable_by_capability
from models.works.reading import get_work, grid_of, list_works, runs_of, schedule_of, upcoming_slots, usage_by_month
from models.works.runs import hand_off_or_release
from models.works.tables import MAX_FAILURES_BEFORE_PAUSE, PROVIDER_CAPABILITIES, BillingMode
from webapp.views.context import is_htmx, render_page, require, viewer

bp = Blueprint("works", __name__)

CALENDAR_CADENCES = (Cadence.DAILY.value, Cadence.WEEKLY.value, Cadence.MONTHLY.value)
CAPABILITY_LABELS = {"ai": "AI", "search": "Search", "screenshot": "Screenshot",
                     "contentExtractor": "Content extractor", "pipeline": "Pipeline"}


def _cadence_choices(plan: str, billing: str) -> list[dict]:
    """Every cadence, with why it cannot be chosen under ``billing`` (None when it can)."""
    plans = works_context().plans
    return [{"value": cadence.value, "label": cadence.value.replace("_", " "),
             "refusal": plans.refusal(plan, cadence, billing)} for cadence in Cadence]


def schedule_words(schedule) -> str:
    """How the schedule runs, in words ("Every Monday at 09:00"); its cadence alone if its grid is incomplete."""
    try:
        return grid_in_words(grid_of(schedule))
    except ValueError:
        return schedule.cadence.replace("_", " ")


def _grid_values(schedule) -> dict:
    """The weekday, day of month and wall time a calendar schedule's grid names (empty for the others)."""
    anchor = schedule.anchor_local_naive if schedule is not None and schedule.anchor_local is not None else None
    if anchor is None:
        return {"weekday": "", "dayOfMonth": "", "time": ""}
    return {"weekday": WEEKDAYS[anchor.weekday()], "dayOfMonth": str(anchor.day), "time": anchor.strftime("%H:%M")}


def _form_values(schedule, form=None) -> dict:
    """What the schedule form shows: what was typed, else the schedule, else a fresh one."""
    if form is not None:
        return {"weekday": form.get("weekday", ""), "dayOfMonth": form.get("dayOfMonth", ""),
                "time": form.get("time", ""),"cadence": form.get("cadence", ""), "billingMode": form.get("billingMode") or "subscription",
                "maxFailureBeforePause": form.get("maxFailureBeforePause", "3"),
                "overlapPolicy": form.get("overlapPolicy") or "skip",
                "enable": form.get("enable") == "on",
                "overrides": {cap: form.get(f"override_{cap}", "") for cap in PROVIDER_CAPABILITIES}}
    if schedule is None:
        return {**_grid_values(None), "cadence": "daily", "billingMode": "subscription", "maxFailureBeforePause": "3",
                "enable": True,
                "overlapPolicy": "skip",
                "overrides": {cap: "" for cap in PROVIDER_CAPABILITIES}}
    overrides = schedule.provider_overrides or {}
    return {**_grid_values(schedule), "cadence": schedule.cadence, "billingMode": schedule.billing_mode,
            "maxFailureBeforePause": str(schedule.max_failure_before_pause), "enable": schedule.status == "active",
            "overlapPolicy": schedule.overlap_policy,
            "overrides": {cap: overrides.get(cap, "") for cap in PROVIDER_CAPABILITIES}}


def _schedule_card(work, *, form=None, error: DomainError | None = None, note: str | None = None) -> dict:
    v = viewer()
    schedule = schedule_of(db.session, work.id)
    values = _form_values(schedule, form)
    now = works_context().clock.now()
    return dict(v=v, work=work, schedule=schedule, values=values, error=error, note=note,
                schedule_words=schedule_words, cadences=_cadence_choices(v.workspace.plan, values["billingMode"]),
                plugins=usable_by_capability(), capabilities=PROVIDER_CAPABILITIES, labels=CAPABILITY_LABELS,
                max_failures=MAX_FAILURES_BEFORE_PAUSE, can_edit=may_edit_works(v.role),
                upcoming=upcoming_slots(schedule, v.zone, now, limit=3) if schedule and schedule.status == "active"
                else [])


def _runs_card(work, *, error: DomainError | None = None, note: str | None = None) -> dict:
    v = viewer()
    return dict(v=v, work=work, runs=runs_of(db.session, work.id, limit=25), error=error, note=note,
                can_edit=may_edit_works(v.role))


def render_work(work, *, status: int = 200, schedule_form=None, schedule_error=None, schedule_note=None,
                runs_error=None, runs_note=None):
    """The work's whole page (for htmx, its content block)."""
    return render_page("works/work.html", **_schedule_card(work, form=schedule_form, error=schedule_error,
                                                           note=schedule_note),
                       runs_card=_runs_card(work, error=runs_error, note=runs_note)), status


# -- the list ---------------------------------------------------------------------------------


def render_list(*, error: DomainError | None = None, status: int = 200, typed=None):
    v = viewer()
    works = list_works(db.session, v.workspace.id, limit=200)
    return render_page("works/works.html", v=v, works=works, error=error, typed=typed or {},
                       schedule_words=schedule_words,
                       pipelines=usable_by_capability()["pipeline"], can_edit=may_edit_works(v.role),
                       base_url=works_context().base_url), status


@bp.get("/works")
@require(Permission.READ)
def index():
    """Every work: generation status, cadence, next run in the workspace's zone, last run, failures."""
    return render_list()


@bp.post("/works")
@require(Permission.OPERATE)
def create():
    """Create a work from the form (name, pipeline, and the webhook's URL)."""
    v = viewer()
    context = works_context()
    settings = {}
    if request.form.get("url", "").strip():
        settings["url"] = request.form["url"]
    try:
        with write_session() as session:
            change = create_work(session, v.workspace.id, name=request.form.get("name"),
                                 pipeline=request.form.get("pipeline"), settings=settings, actor=v.actor, role=v.role,
                                 now=context.clock.now(), context=context)
            work_id = change.work.id
    except DomainError as error:
        return render_list(error=error, status=error.status, typed=request.form)
    flash(f"Work #{work_id} created. Its signing secret, shown this once: {change.secret}")
    return redirect(url_for("works.show", work_id=work_id), code=303)


# -- one work ---------------------------------------------------------------------------------


@bp.get("/works/<int:work_id>")
@require(Permission.READ)
def show(work_id: int):
    """A work: its schedule form, Run Now, pause and resume, and its run history."""
    return render_work(get_work(db.session, viewer().workspace.id, work_id))


def _schedule_fields(form) -> dict:
    """The schedule form as :func:`put_schedule` takes it; a 422 names a bad field."""
    raw = (form.get("maxFailureBeforePause") or "").strip()
    if not raw.isdecimal() or len(raw) > 3:
        raise InvalidInput(f"Failures before pausing is a whole number from 1 to {MAX_FAILURES_BEFORE_PAUSE}.",
                           field="maxFailureBeforePause", code="out_of_range")
    overrides = {cap: form.get(f"override_{cap}") or None for cap in PROVIDER_CAPABILITIES}
    cadence = form.get("cadence") or ""
    named = {}
    if cadence == Cadence.WEEKLY.value and form.get("weekday"):
        named["weekday"] = form["weekday"]
    if cadence == Cadence.MONTHLY.value and (form.get("dayOfMonth") or "").strip():
        day = form["dayOfMonth"].strip()
        named["day_of_month"] = int(day) if day.isdecimal() and len(day) <= 2 else day
    if cadence in CALENDAR_CADENCES and form.get("time"):
        named["wall_time"] = form["time"]
    return dict(**named, enable=form.get("enable") == "on", cadence=form.get("cadence") or "",
                billing_mode=form.get("billingMode") or "", max_failure_before_pause=int(raw),
                overlap_policy=form.get("overlapPolicy") or "skip",
                provider_overrides={cap: value for cap, value in overrides.items() if value})


def _save_schedule(work_id: int, **fields):
    v = viewer()
    context = works_context()
    work = get_work(db.session, v.workspace.id, work_id)
    try:
        with write_session() as session:
            put_schedule(session, v.workspace.id, work_id, actor=v.actor, role=v.role, now=context.clock.now(),
                         context=context, **fields)
    except DomainError as error:
        db.session.rollback()  # end the read snapshot taken before the write
        if is_htmx():
            card = _schedule_card(work, form=request.form if "cadence" in request.form else None, error=error)
            return render_template("works/_schedule.html", **card), error.status
        return render_work(work, status=error.status, schedule_error=error,
                           schedule_form=request.form if "cadence" in request.form else None)
    db.session.rollback()  # end the read snapshot taken before the write
    note = "Schedule saved."
    if is_htmx():
        return render_template("works/_schedule.html", **_schedule_card(work, note=note))
    flash(note)
    return redirect(url_for("works.show", work_id=work_id), code=303)


@bp.post("/works/<int:work_id>/schedule")
@require(Permission.OPERATE)
def save_schedule(work_id: int):
    """Save the schedule form (create or update)."""
    try:
        fields = _schedule_fields(request.form)
    except InvalidInput as error:
        work = get_work(db.session, viewer().workspace.id, work_id)
        if is_htmx():
            return render_template("works/_schedule.html", **_schedule_card(work, form=request.form,
                                                                            error=error)), error.status
        return render_work(work, status=error.status, schedule_error=error, schedule_form=request.form)
    return _save_schedule(work_id, **fields)


@bp.get("/works/<int:work_id>/schedule-form")
@require(Permission.READ)
def schedule_form(work_id: int):
    """The schedule card with what was typed, after the billing mode changed (off-plan cadences open up)."""
    work = get_work(db.session, viewer().workspace.id, work_id)
    if not is_htmx():
        return redirect(url_for("works.show", work_id=work_id))
    form = request.args if "cadence" in request.args else None
    if form is not None and form.get("billingMode") not in {mode.value for mode in BillingMode}:
        form = None
    if form is not None and request.args.get("preview") == "1":
        note, error = _preview(work.id, form)
        return render_template("works/_schedule.html", **_schedule_card(work, form=form, note=note, error=error))
    return render_template("works/_schedule.html", **_schedule_card(work, form=form))


class _Preview(Exception):
    """Rolls back the dry run of a schedule form once its next run is read."""


def _preview(work_id: int, form) -> tuple[str | None, DomainError | None]:
    """What saving the form would make the next run, saving nothing: (the words, or the refusal)."""
    v = viewer()
    context = works_context()
    try:
        fields = _schedule_fields(form)
        with write_session() as session:
            change = put_schedule(session, v.workspace.id, work_id, actor=v.actor, role=v.role,
                                  now=context.clock.now(), context=context, **fields)
            next_run = change.schedule.next_run_at
            raise _Preview
    except _Preview:
        pass
    except DomainError as error:
        db.session.rollback()
        return None, error
    db.session.rollback()
    if next_run is None:
        return "Saved like this, the schedule would be paused: no next run.", None
    return f"Saved like this, the next run would be {v.local(next_run).strftime('%a %d %b %Y, %H:%M %Z')}.", None


@bp.post("/works/<int:work_id>/pause")
@require(Permission.OPERATE)
def pause(work_id: int):
    """Pause the schedule: kept, not run."""
    return _save_schedule(work_id, enable=False)


@bp.post("/works/<int:work_id>/resume")
@require(Permission.OPERATE)
def resume(work_id: int):
    """Resume the schedule: failures reset, the next run read off a new grid from now."""
    return _save_schedule(work_id, enable=True)


@bp.get("/works/<int:work_id>/runs")
@require(Permission.READ)
def runs(work_id: int):
    """The run card alone (it polls itself while a generation is running)."""
    work = get_work(db.session, viewer().workspace.id, work_id)
    if not is_htmx():
        return redirect(url_for("works.show", work_id=work_id))
    return render_template("works/_runs.html", card=_runs_card(work))


@bp.post("/works/<int:work_id>/run")
@require(Permission.OPERATE)
def run(work_id: int):
    """Run Now: a generation starts at once (409 while one is running)."""
    v = viewer()
    context = works_context()
    work = get_work(db.session, v.workspace.id, work_id)
    try:
        with write_session() as session:
            change = run_now(session, v.workspace.id, work_id, actor=v.actor, role=v.role, now=context.clock.now(),
                             context=context)
            run_ids = [started.id for started in change.runs]
    except DomainError as error:
        if is_htmx():
            return render_template("works/_runs.html", card=_runs_card(work, error=error)), error.status
        return render_work(work, status=error.status, runs_error=error)
    try:
        hand_off_or_release(context, change.runs, actor=v.actor)
    except DomainError as error:
        db.session.rollback()  # end the read snapshot taken before the writes
        fresh = get_work(db.session, v.workspace.id, work_id)
        if is_htmx():
            return render_template("works/_runs.html", card=_runs_card(fresh, error=error)), error.status
        return render_work(fresh, status=error.status, runs_error=error)
    db.session.rollback()  # end the read snapshot taken before the write
    note = f"Run #{run_ids[0]} started."
    if is_htmx():
        return render_template("works/_runs.html", card=_runs_card(get_work(db.session, v.workspace.id, work_id),
                                                                   note=note))
    flash(note)
    return redirect(url_for("works.show", work_id=work_id), code=303)


@bp.post("/works/<int:work_id>/delete")
@require(Permission.OPERATE)
def delete(work_id: int):
    """Delete the work (soft): its schedule is canceled, its runs and usage kept."""
    v = viewer()
    context = works_context()
    with write_session() as session:
        delete_work(session, v.workspace.id, work_id, actor=v.actor, role=v.role, now=context.clock.now())
    flash(f"Work #{work_id} deleted; its runs are kept.")
    response = redirect(url_for("works.index"), code=303)
    if is_htmx():
        response.headers["HX-Redirect"] = url_for("works.index")
    return response


# -- the registry and the ledger --------------------------------------------------------------


@bp.get("/works/plugins")
@require(Permission.READ)
def plugins():
    """The plugin registry: built-ins and entry-point plugins, broken ones with why."""
    return render_page("works/plugins.html", v=viewer(), plugins=list(installed_plugins().values()),
                       labels=CAPABILITY_LABELS)


@bp.get("/works/usage")
@require(Permission.READ)
def usage():
    """Generations billed by use, per month in the workspace's zone."""
    v = viewer()
    return render_page("works/usage.html", v=v, months=usage_by_month(db.session, v.workspace.id, months=24),
                       plan=v.workspace.plan, plans=works_context().plans)
