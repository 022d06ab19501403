"""The post composer: write, target, tailor per network (with a live preview of each), follow it with a thread or a
first comment, time, save as draft, approve, unapprove, archive, post now.

Every rule lives in :mod:`models.posts`; these views parse the form, call it, and render.
"""

from flask import Blueprint, flash, redirect, render_template, request, url_for
from sqlalchemy import select

from models.accounts.permissions import Permission
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput
from models.posts.tables import ACTION_TYPE, PostStatus, post_id_of
from models.posts.operations import approve_post, archive_post, create_post, post_now, unapprove_post, update_post
from models.posts.reading import delivery_of, get_post, post_rows, post_targets, posts_by_id
from models.posts.threads import (COMMENT, MAX_THREAD, THREAD, fit_item, follow_up_rows, follow_ups_of, position_of,
                                  takers)
from models.core.time_input import parse_clock, parse_day, resolve_typed
from models.core.runtime import runtime
from models.imports.runs import commit, dry_run
from models.media.fetching import fetch_links_into_library
from models.media.settings import media_settings
from models.posts.checks import check_targets, fit_on_targets
from models.posts.queue import WHENS, plan_slot, shift_queue
from models.posts.import_csv import MAX_POST_LINES, PostImport
from models.posts.preview import previews_for
from webapp.uploads import takes_upload
from webapp.views.context import is_htmx, render_page, require, viewer

bp = Blueprint("posts", __name__)


def post_url(row) -> str | None:
    """The composer of the post a row was minted from, or None for a row of its own."""
    if row.action_type != ACTION_TYPE:
        return None
    position = position_of(row.thing_id)  # a head, or one of its thread's items or its first comment
    post_id = post_id_of(row.thing_id) if position is None else position[0]
    return url_for("posts.edit", post_id=post_id) if post_id is not None else None


def _channels(workspace_id: int) -> list[Channel]:
    return list(db.session.scalars(select(Channel).where(Channel.workspace_id == workspace_id).order_by(Channel.name)))


def _form_fields(form, *, timed: bool = True) -> dict:
    """The composer's fields as the domain functions take them, links fetched into the library; a 422 names a bad one.

    Not ``timed`` (the post goes into the queue), the date and time are left to the queue."""
    wall_date, wall_time = (parse_day(form.get("date")), parse_clock(form.get("time"))) if timed else (None, None)
    media = [line.strip() for line in (form.get("media") or "").replace(",", "\n").splitlines() if line.strip()]
    v = viewer()
    media = fetch_links_into_library(v.workspace.id, media, settings=media_settings(), actor=v.actor,
                                     now=runtime().now())
    variants = {name: {**own, "media": fetch_links_into_library(v.workspace.id, own["media"], settings=media_settings(),
                                                                actor=v.actor, now=runtime().now())}
                if own.get("media") else own
                for name, own in _variants_of(_typed_tabs(form, form.getlist("targets"))).items()}
    thread, _ = _thread_items(_typed_thread(form))
    for index, item in enumerate(thread):
        try:
            item["media"] = fetch_links_into_library(v.workspace.id, item["media"], settings=media_settings(),
                                                     actor=v.actor, now=runtime().now())
        except InvalidInput as exc:
            raise InvalidInput(exc.message, field=f"thread[{index}].media", code=exc.code) from None
    return dict(body=form.get("body") or "", targets=form.getlist("targets"), media=media, variants=variants,
                thread=thread or None, first_comment=_comment_item(_typed_comment(form)),
                wall_date=wall_date, wall_time=wall_time)


# -- what follows the post: a thread's items (networks with replies), a first comment (networks with comments) ---


def _typed_thread(source) -> list[dict]:
    """The thread's items as typed, in order: each one's text and media lines (one more than a thread may hold, so
    the save can say it is too long)."""
    bodies, media = source.getlist("thread_body"), source.getlist("thread_media")
    media += [""] * (len(bodies) - len(media))
    return [dict(body=body, media=lines) for body, lines in zip(bodies, media)][:MAX_THREAD + 1]


def _thread_items(typed: list[dict]) -> tuple[list[dict], list[int]]:
    """The typed items that hold something, as the domain takes them, and where each one is in the form: an item
    left empty is no item."""
    items, where = [], []
    for index, item in enumerate(typed):
        lines = _media_lines(item["media"])
        if item["body"].strip() or lines:
            items.append({"body": item["body"], "media": lines})
            where.append(index)
    return items, where


def _typed_comment(source) -> dict:
    return dict(body=source.get("first_comment_body", ""))


def _comment_item(typed: dict) -> dict | None:
    """The first comment as the domain takes it (text: no network Tickwork posts to takes media in a comment)."""
    return {"body": typed["body"], "media": []} if typed["body"].strip() else None


def _saved_thread(post) -> list[dict]:
    return [dict(body=item.get("body", ""), media="\n".join(str(m) for m in item.get("media") or []))
            for item in post.thread or []]


def _follow_up_error(error: DomainError | None, typed: list[dict]) -> dict | None:
    """Which follow-up field a refusal is about, with the item's place in the form (``thread[1]`` of the saved list is
    the form's third item when the second was left empty)."""
    field = (error.field or "") if error is not None else ""
    if field == "first_comment" or field.startswith("first_comment."):
        return dict(what=COMMENT, index=None)
    if field != "thread" and not field.startswith("thread["):
        return None
    index = None
    if field.startswith("thread["):
        number = field[7:].split("]", 1)[0]
        _, where = _thread_items(typed)
        if number.isdecimal() and int(number) < len(where):
            index = where[int(number)]
    part = field.rsplit(".", 1)[1] if "." in field else None
    return dict(what=THREAD, index=index, part=part)


def _follow_up_view(values: dict, workspace_id: int, *, editable: bool, error: DomainError | None = None) -> dict:
    """What the follow-ups section shows: which checked targets take a thread and a first comment, the thread's
    and the comment's counters per network, and the field a refusal is about."""
    named = [name for name in values.get("targets") or [] if isinstance(name, str)]
    channels = [channel for channel in _channels(workspace_id) if channel.name in named]
    thread, comment = values.get("thread") or [], values.get("first_comment") or {}
    replying = [channel.name for channel, _ in takers(channels, THREAD)]
    commenting = [channel.name for channel, _ in takers(channels, COMMENT)]
    thread_fits = [(number, fit_item(db.session, workspace_id, item["body"], _media_lines(item["media"]), channels,
                                     THREAD))
                   for number, item in enumerate(thread, 2) if item["body"].strip() or _media_lines(item["media"])]
    comment_fits = (fit_item(db.session, workspace_id, comment["body"], [], channels, COMMENT)
                    if (comment.get("body") or "").strip() else [])
    return dict(replying=replying, commenting=commenting, thread_fits=thread_fits, comment_fits=comment_fits,
                show_thread=bool(thread) or (editable and bool(replying)),
                show_comment=bool((comment.get("body") or "").strip()) or (editable and bool(commenting)),
                error=_follow_up_error(error, thread) if error is not None else None, message=error)


@bp.get("/posts/follow-ups")
@require(Permission.READ)
def follow_ups():
    """The thread and first-comment fields for the checked targets, keeping what was typed."""
    v = viewer()
    if not is_htmx():
        return redirect(url_for("posts.new"))
    values = _typed_values(request.args)
    return render_template("posts/_follow_ups.html", values=values, editable=True,
                           follow=_follow_up_view(values, v.workspace.id, editable=True))


@bp.get("/posts/follow-up-counts")
@require(Permission.READ)
def follow_up_counts():
    """Each thread item's and the first comment's counter on every checked target that takes it."""
    v = viewer()
    if not is_htmx():
        return redirect(url_for("posts.new"))
    values = _typed_values(request.args)
    return render_template("posts/_follow_up_counters.html",
                           follow=_follow_up_view(values, v.workspace.id, editable=True))


# -- tailoring per network: one tab per checked target ------------------------------------------

VARIANT_BODY, VARIANT_MEDIA, VARIANT_NO_MEDIA = "variant_body:", "variant_media:", "variant_no_media:"


def _media_lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").replace(",", "\n").splitlines() if line.strip()]


def _typed_tabs(source, targets) -> dict:
    """What each checked target's tab holds, as typed: its text, its media lines, whether it sends no media."""
    return {name: dict(body=source.get(VARIANT_BODY + name, ""), media=source.get(VARIANT_MEDIA + name, ""),
                       no_media=bool(source.get(VARIANT_NO_MEDIA + name)))
            for name in targets if isinstance(name, str)}


def _saved_tabs(post, targets) -> dict:
    """What each target's tab shows of a saved post's variants."""
    tabs = {}
    for name in targets:
        own = (post.variants or {}).get(name) or {}
        media = own.get("media")
        tabs[name] = dict(body=own.get("body", ""), media="\n".join(str(item) for item in media or []),
                          no_media=media == [])
    return tabs


def _variants_of(tabs: dict) -> dict:
    """The variants the tabs give: a tab's text where one is typed, its media where named (or none, when asked)."""
    variants = {}
    for name, typed in tabs.items():
        own = {}
        if typed["body"].strip():
            own["body"] = typed["body"]
        if typed["no_media"]:
            own["media"] = []
        elif _media_lines(typed["media"]):
            own["media"] = _media_lines(typed["media"])
        if own:
            variants[name] = own
    return variants


def _previews(values: dict, workspace_id: int):
    named = [name for name in values.get("targets") or [] if isinstance(name, str)]
    by_name = {channel.name: channel for channel in _channels(workspace_id)}
    channels = [by_name[name] for name in named if name in by_name]
    thread, _ = _thread_items(values.get("thread") or [])
    return previews_for(db.session, workspace_id, values.get("body") or "", _media_lines(values.get("media")),
                        _variants_of(values.get("tabs") or {}), channels, thread=thread,
                        first_comment=_comment_item(values.get("first_comment") or dict(body="")))


def _typed_values(source) -> dict:
    """The composer's fields a fragment is asked about (the query string of an htmx request)."""
    targets = [name for name in source.getlist("targets") if isinstance(name, str)]
    return dict(body=source.get("body", ""), media=source.get("media", ""), targets=targets,
                tabs=_typed_tabs(source, targets), tab=source.get("tab", ""), thread=_typed_thread(source),
                first_comment=_typed_comment(source))


@bp.get("/posts/tailoring")
@require(Permission.READ)
def tailoring():
    """The per-network tabs for the checked targets, keeping what each tab holds."""
    if not is_htmx():
        return redirect(url_for("posts.new"))
    return render_template("posts/_tailoring.html", values=_typed_values(request.args), editable=True)


@bp.get("/posts/previews")
@require(Permission.READ)
def previews():
    """Each checked target's preview: the account, its own text as its network shows it, its media, its counter."""
    v = viewer()
    if not is_htmx():
        return redirect(url_for("posts.new"))
    return render_template("posts/_preview_items.html", previews=_previews(_typed_values(request.args), v.workspace.id))


def _draft_values(form, post=None, day: str | None = None) -> dict:
    """What the form shows: what was typed, else the post, else a fresh draft for ``day``."""
    if form:
        return dict(body=form.get("body", ""), media=form.get("media", ""), targets=form.getlist("targets"),
                    date=form.get("date", ""), time=form.get("time", ""),
                    tabs=_typed_tabs(form, form.getlist("targets")), tab=form.get("tab", ""),
                    thread=_typed_thread(form), first_comment=_typed_comment(form))
    if post is not None:
        targets = [c.name for c in post_targets(db.session, post.id)]
        return dict(body=post.body, media="\n".join(str(item) for item in post.media or []),
                    targets=targets, tabs=_saved_tabs(post, targets),
                    thread=_saved_thread(post), first_comment=dict(body=(post.first_comment or {}).get("body", "")),
                    date=post.wall_date.isoformat(), time=post.wall_time.strftime("%H:%M"))
    return dict(body="", media="", targets=[], thread=[], first_comment=dict(body=""), date=day or "", time="09:00")


EDITABLE = (PostStatus.DRAFT.value, PostStatus.APPROVED.value, PostStatus.IN_REVIEW.value, PostStatus.EXPIRED.value)


def render_composer(post=None, *, error: DomainError | None = None, status: int = 200, day: str | None = None,
                    note: str | None = None, keep_typed: bool = True):
    v = viewer()
    typed = request.form if request.method == "POST" and keep_typed else None
    values = _draft_values(typed, post, day)
    if error is not None and (error.field or "").startswith("variants."):
        values["tab"] = error.field.split(".")[1]  # open the tab the refusal is about
    delivery, follow_ups = None, {}
    if post is not None:
        targets = post_targets(db.session, post.id)
        delivery = delivery_of([c.name for c in targets], post_rows(db.session, v.workspace.id, [post.id])[post.id])
        if post.thread or post.first_comment:  # each target's thread items and first comment, and what stopped them
            follow_rows = follow_up_rows(db.session, v.workspace.id, post.id)
            follow_ups = {c.name: shown for c in targets if (shown := follow_ups_of(post, c, follow_rows))}
    editable = post is None or post.status in EDITABLE
    return render_page(
        "posts/composer.html", v=v, post=post, values=values, channels=_channels(v.workspace.id), delivery=delivery,
        follow_ups=follow_ups, editable=editable,
        follow=_follow_up_view(values, v.workspace.id, editable=editable, error=error),
        error=error, note=note, preview=_preview(values.get("date"), values.get("time"), v.zone),
        fits=_fits(values, v.workspace.id), previews=_previews(values, v.workspace.id), review=_review_panel(post),
    ), status


def _review_panel(post) -> dict | None:
    if post is None:
        return None
    from webapp.views.post_review import review_panel

    return review_panel(post)


def _preview(raw_date: str | None, raw_time: str | None, zone: str) -> dict | None:
    """The instant a wall date and time resolve to, and the note when the wall time shifted."""
    try:
        resolved = resolve_typed(parse_day(raw_date), parse_clock(raw_time), zone)
    except InvalidInput:
        return None
    return dict(local=resolved.local, utc=resolved.instant, note=resolved.note)


@bp.get("/posts/new")
@require(Permission.READ)
def new():
    """A blank composer, for the day clicked on the calendar when there is one."""
    try:
        day = parse_day(request.args.get("date")).isoformat()
    except InvalidInput:
        day = ""
    return render_composer(day=day)


def _fits(values: dict, workspace_id: int):
    named = [name for name in values.get("targets") or [] if isinstance(name, str)]
    channels = [channel for channel in _channels(workspace_id) if channel.name in named]
    media = [line.strip() for line in (values.get("media") or "").replace(",", "\n").splitlines() if line.strip()]
    return fit_on_targets(db.session, workspace_id, values.get("body") or "", channels, media,
                          _variants_of(values.get("tabs") or {}))


@bp.get("/posts/counts")
@require(Permission.READ)
def counts():
    """Each checked target's counter: the body counted as its network counts, and the first rule broken."""
    v = viewer()
    values = _typed_values(request.args)
    if not is_htmx():
        return redirect(url_for("posts.new"))
    return render_template("posts/_counters.html", fits=_fits(values, v.workspace.id))


@bp.get("/posts/preview-time")
@require(Permission.READ)
def preview_time():
    """The resulting instant of the composer's date and time, with any DST note."""
    v = viewer()
    preview = _preview(request.args.get("date"), request.args.get("time"), v.zone)
    if not is_htmx():
        return redirect(url_for("posts.new", date=request.args.get("date", "")))
    return render_template("posts/_time_preview.html", preview=preview, v=v)


@bp.get("/posts/queue-preview")
@require(Permission.READ)
def queue_preview():
    """Where "Add to queue" or "Share next" would put the post, and which queued posts would move down."""
    v = viewer()
    if not is_htmx():
        return redirect(url_for("posts.new"))
    when = request.args.get("when")
    plan = error = None
    if when in WHENS:
        try:
            channels = check_targets(db.session, v.workspace.id, request.args.getlist("targets"))
            plan = plan_slot(db.session, v.workspace.id, channels, when, now=runtime().now(), policy=runtime().policy)
        except DomainError as exc:
            error = exc
    titles = {}
    if plan is not None and plan.moves:
        titles = {post.id: post.body for post in posts_by_id(db.session, v.workspace.id,
                                                              [move.post_id for move in plan.moves]).values()}
    return render_template("posts/_queue_preview.html", plan=plan, error=error, when=when, titles=titles, v=v)


@bp.post("/posts")
@require(Permission.COMPOSE)
def create():
    """Save a new post as a draft, and approve it too when asked."""
    v = viewer()
    rt = runtime()
    when = request.form.get("when") if request.form.get("when") in WHENS else None
    shifted = []
    try:
        fields = _form_fields(request.form, timed=when is None)
        with write_session() as session:
            if when is not None:  # "Add to queue" or "Share next": the slot is found in this transaction
                plan = plan_slot(session, v.workspace.id, check_targets(session, v.workspace.id, fields["targets"]),
                                 when, now=rt.now(), policy=rt.policy, lock=True)
                fields.update(wall_date=plan.wall_date, wall_time=plan.wall_time, from_queue=True)
            change = create_post(session, v.workspace.id, actor=v.actor, now=rt.now(), policy=rt.policy, **fields)
            if when is not None:
                shifted = shift_queue(session, v.workspace.id, plan, actor=v.actor, now=rt.now(), policy=rt.policy)
            if request.form.get("intent") == "approve":
                change = approve_post(session, v.workspace.id, change.post.id, actor=v.actor, now=rt.now(),
                                      policy=rt.policy, role=v.role)
    except DomainError as error:
        return render_composer(error=error, status=error.status)
    rt.announce_due(shifted + change.new_rows)
    _flash_saved(change)
    if when is not None and plan.moves:
        flash(f"{len(plan.moves)} queued post{'' if len(plan.moves) == 1 else 's'} moved down one slot.", "info")
    return redirect(url_for("posts.edit", post_id=change.post.id), code=303)


def _flash_saved(change, verb: str = "Saved") -> None:
    post = change.post
    flash(f"{verb}: post #{post.id} is {post.status}.", "ok")
    if change.note:
        flash(change.note, "info")


@bp.get("/posts/<int:post_id>")
@require(Permission.READ)
def edit(post_id: int):
    """The composer with a post loaded, its status, and each target's delivery."""
    v = viewer()
    return render_composer(get_post(db.session, v.workspace.id, post_id))


@bp.post("/posts/<int:post_id>")
@require(Permission.COMPOSE)
def update(post_id: int):
    """Save changes to a post (its rows follow when it is approved)."""
    v = viewer()
    rt = runtime()
    try:
        fields = _form_fields(request.form)
        with write_session() as session:
            change = update_post(session, v.workspace.id, post_id, actor=v.actor, now=rt.now(), policy=rt.policy,
                                 **fields)
            if request.form.get("intent") == "approve":
                change = approve_post(session, v.workspace.id, post_id, actor=v.actor, now=rt.now(),
                                      policy=rt.policy, role=v.role)
    except DomainError as error:
        return render_composer(get_post(db.session, v.workspace.id, post_id), error=error, status=error.status)
    rt.announce_due(change.new_rows)
    _flash_saved(change)
    return redirect(url_for("posts.edit", post_id=post_id), code=303)


def _transition(post_id: int, operation, verb: str, **kwargs):
    v = viewer()
    rt = runtime()
    try:
        with write_session() as session:
            change = operation(session, v.workspace.id, post_id, actor=v.actor, now=rt.now(), policy=rt.policy,
                               **kwargs)
    except DomainError as error:
        return render_composer(get_post(db.session, v.workspace.id, post_id), error=error, status=error.status,
                               keep_typed=False)
    rt.announce_due(change.new_rows)
    _flash_saved(change, verb)
    return redirect(url_for("posts.edit", post_id=post_id), code=303)


@bp.post("/posts/<int:post_id>/approve")
@require(Permission.APPROVE)
def approve(post_id: int):
    """Approve a draft: its rows are queued at once."""
    return _transition(post_id, approve_post, "Approved", role=viewer().role)


@bp.post("/posts/<int:post_id>/unapprove")
@require(Permission.COMPOSE)
def unapprove(post_id: int):
    """Back to draft: its queued rows are withdrawn."""
    return _transition(post_id, unapprove_post, "Back to draft")


@bp.post("/posts/<int:post_id>/archive")
@require(Permission.COMPOSE)
def archive(post_id: int):
    """Archive a post: its queued rows are cancelled at once."""
    return _transition(post_id, archive_post, "Archived")


@bp.post("/posts/<int:post_id>/post-now")
@require(Permission.COMPOSE)
def send_now(post_id: int):
    """Send every target (or one) now; a draft is approved first, since the composer offers it to
    people who may approve (a draft sent behind its own back would still look like one)."""
    channel = (request.form.get("channel") or "").strip() or None
    return _transition(post_id, _approve_and_post_now, "Sending now", channel=channel, role=viewer().role)


def _approve_and_post_now(session, workspace_id: int, post_id: int, *, actor, now, policy, channel=None, role=None):
    if get_post(session, workspace_id, post_id, lock=True).status == PostStatus.DRAFT.value:
        approve_post(session, workspace_id, post_id, actor=actor, now=now, policy=policy, role=role)
    return post_now(session, workspace_id, post_id, channel=channel, actor=actor, now=now, policy=policy)



# -- scheduling from a CSV file ---------------------------------------------------------------

IMPORT_LINES_SHOWN = 500
IMPORT_TARGET = "workspace"


def _import_page(*, report=None, result=None, error: DomainError | None = None, status: int = 200):
    v = viewer()
    return render_page("posts/import.html", v=v, report=report, result=result, error=error, shown=IMPORT_LINES_SHOWN,
                       max_lines=MAX_POST_LINES, channels=_channels(v.workspace.id)), status


@bp.get("/posts/import")
@require(Permission.READ)
def import_form():
    """Upload a CSV file of posts: a dry run first, showing each line's fate."""
    return _import_page()


@bp.post("/posts/import")
@require(Permission.COMPOSE)
@takes_upload
def import_upload():
    """A CSV file's dry run: every line's fate, and buttons to make the accepted posts as drafts or approved."""
    v = viewer()
    rt = runtime()
    try:
        upload = request.files.get("file")
        if upload is None or not upload.filename:
            raise InvalidInput("Choose a CSV file to upload.", field="file", code="missing")
        report = dry_run(upload.read(), PostImport(clock=rt.clock, policy=rt.policy), workspace_id=v.workspace.id,
                         target=IMPORT_TARGET, actor=v.actor, clock=rt.clock, policy=rt.policy)
    except DomainError as error:
        return _import_page(error=error, status=error.status)
    return _import_page(report=report)


@bp.post("/posts/imports/<import_id>/commit")
@require(Permission.COMPOSE)
def import_commit(import_id: str):
    """Make exactly the posts the dry run promised, as drafts or approved, each re-checked."""
    v = viewer()
    rt = runtime()
    choice = request.form.get("status")
    try:
        if choice not in ("draft", "approved"):
            raise InvalidInput("Choose drafts or approved posts.", field="status", code="bad_status")
        checker = PostImport(clock=rt.clock, policy=rt.policy, approve=choice == "approved")
        result = commit(import_id, checker, workspace_id=v.workspace.id, target=IMPORT_TARGET, actor=v.actor,
                        clock=rt.clock)
    except DomainError as error:
        return _import_page(error=error, status=error.status)
    rt.announce_due(checker.new_rows)
    return _import_page(result=dict(outcome=result, status=choice, queued=len(checker.new_rows)))
