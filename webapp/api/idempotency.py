"""``Idempotency-Key`` on the API's creates: the request runs once, its answer is kept and replayed.

The rules are in :mod:`models.accounts.idempotency`; this decorator reads the header, asks
it before the view runs, and gives it the view's answer afterwards. Every POST that creates
something wears it (actions, posts, recurring rules and their Run Now, works and their Run
Now, campaigns, contacts, enrollments and CSV enrollments); ``tests/integration/test_openapi.py``
checks that each such route says so in the document.
"""

from functools import wraps

from flask import jsonify, make_response, request

from models.accounts import idempotency
from models.core.database import write_session
from models.core.runtime import runtime
from webapp.auth import api_caller


def _request_print() -> str:
    """Method, path with its query (a dry run is not its commit) and body: what makes two requests the same."""
    query = request.query_string.decode("utf-8", "replace")
    path = request.path + (f"?{query}" if query else "")
    return idempotency.fingerprint(request.method, path, request.get_data(cache=True))


def idempotent(view=None, *, sealed: tuple[str, ...] = ()):
    """Honour an ``Idempotency-Key`` header on a POST that creates something.

    ``sealed`` names answer fields shown once (a work's signing secret): they are kept sealed
    with the app's key while the answer waits for a replay, never in clear in the database.
    """
    if view is None:
        return lambda inner: idempotent(inner, sealed=sealed)

    @wraps(view)
    def wrapper(*args, **kwargs):
        key = idempotency.check_key(request.headers.get("Idempotency-Key"))
        if key is None:
            return view(*args, **kwargs)
        caller, rt = api_caller(), runtime()
        mine = dict(workspace_id=caller.workspace.id, token_id=caller.token_id, key=key)
        print_ = _request_print()
        with write_session() as session:
            replay = idempotency.begin(session, **mine, print_=print_, now=rt.now(), policy=rt.policy)
        if replay is not None:
            body = dict(replay.body)
            for name in sealed:
                if isinstance(body.get(name), str):
                    body[name] = rt.secret_box.open(body[name])
            answer = make_response(jsonify(body), replay.status)
            answer.headers["Idempotent-Replayed"] = "true"
            return answer
        try:
            answer = make_response(view(*args, **kwargs))
        except BaseException:
            with write_session() as session:
                idempotency.release(session, **mine)
            raise
        with write_session() as session:
            if 200 <= answer.status_code < 300 and answer.is_json:
                body = answer.get_json()
                for name in sealed:
                    if isinstance(body.get(name), str):
                        body[name] = rt.secret_box.seal(body[name])
                idempotency.finish(session, **mine, status=answer.status_code, body=body, now=rt.now())
            else:
                idempotency.release(session, **mine)
        return answer

    wrapper.honours_idempotency_key = True  # the document's test finds the creates by it
    return wrapper
