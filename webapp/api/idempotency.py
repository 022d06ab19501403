"""``Idempotency-Key`` on the API's creates: the request runs once, its answer is kept and replayed.

The rules are in :mod:`models.accounts.idempotency`; this decorator reads the header, asks
it before the view runs, and gives it the view's answer afterwards.
"""

from functools import wraps

from flask import jsonify, make_response, request

from models.accounts import idempotency
from models.core.database import write_session
from models.core.runtime import runtime
from webapp.auth import api_caller


def idempotent(view):
    """Honour an ``Idempotency-Key`` header on a POST that creates something."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        key = idempotency.check_key(request.headers.get("Idempotency-Key"))
        if key is None:
            return view(*args, **kwargs)
        caller, rt = api_caller(), runtime()
        mine = dict(workspace_id=caller.workspace.id, token_id=caller.token_id, key=key)
        print_ = idempotency.fingerprint(request.method, request.path, request.get_data(cache=True))
        with write_session() as session:
            replay = idempotency.begin(session, **mine, print_=print_, now=rt.now(), policy=rt.policy)
        if replay is not None:
            answer = make_response(jsonify(replay.body), replay.status)
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
                idempotency.finish(session, **mine, status=answer.status_code, body=answer.get_json(),
                                   now=rt.now())
            else:
                idempotency.release(session, **mine)
        return answer

    return wrapper
