"""The outbox: what the ``log`` channels "sent", newest first, so the demo visibly fires with no provider."""

import json

from flask import Blueprint, render_template, request
from sqlalchemy import select

from models.accounts.permissions import Permission
from models.channels.outbox import entry_cursor, outbox_entries, read_entry_cursor
from models.channels.reading import channel_names
from models.channels.tables import Channel, ChannelKind
from models.core.database import db
from models.core.errors import NotFound
from webapp.views.context import is_htmx, require, viewer

bp = Blueprint("outbox", __name__)

PAGE_SIZE = 50


@bp.get("/outbox")
@require(Permission.READ)
def outbox():
    """The workspace's outbox entries, newest first, for every log channel or one (``?channel=NAME``)."""
    v = viewer()
    session = db.session
    log_channels = list(session.scalars(select(Channel).where(Channel.workspace_id == v.workspace.id,
                                                             Channel.kind == ChannelKind.LOG.value)
                                        .order_by(Channel.name)))
    chosen_name = request.args.get("channel") or None
    chosen = None
    if chosen_name is not None:
        chosen = session.scalar(select(Channel).where(Channel.workspace_id == v.workspace.id,
                                                      Channel.name == chosen_name[:128]))
        if chosen is None:
            raise NotFound("There is no channel by that name in this workspace.")
    cursor = request.args.get("cursor") or None
    before = read_entry_cursor(cursor) if cursor else None
    found = outbox_entries(session, v.workspace.id, channel_id=chosen.id if chosen else None, before=before,
                           limit=PAGE_SIZE + 1)
    page, more = found[:PAGE_SIZE], len(found) > PAGE_SIZE
    context = dict(
        v=v, log_channels=log_channels, chosen=chosen, continued=before is not None,
        entries=[(entry, json.dumps(entry.body.get("payload"), indent=2, sort_keys=True, ensure_ascii=False))
                 for entry in page],
        names=channel_names(session, v.workspace.id),
        next_cursor=entry_cursor(page[-1]) if more else None,
    )
    if is_htmx():
        return render_template("outbox/_entries.html", **context)
    return render_template("outbox/outbox.html", **context)
