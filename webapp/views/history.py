"""History: a full-text search of the archived actions (payloads, errors, targets) in the archive files."""

from flask import Blueprint, current_app, render_template, request

from models.accounts.permissions import Permission
from models.core.database import db
from models.retention.reading import archive_files, search_history
from webapp.views.context import is_htmx, require, viewer

bp = Blueprint("history", __name__)


@bp.get("/history")
@require(Permission.READ)
def history():
    """Search the workspace's archived actions; with no query, say where the archives are."""
    v = viewer()
    directory = current_app.config["TICKWORK_ARCHIVE_DIR"]
    query = (request.args.get("q") or "").strip()
    hits = search_history(db.session, v.workspace.id, directory, query) if query else None
    context = dict(v=v, query=query, hits=hits, files=len(archive_files(directory)))
    if is_htmx():
        return render_template("history/_hits.html", **context)
    return render_template("history/history.html", **context)
