"""Sessions with a server-side side: a saved cookie opens nothing once its session has ended.

Each attack is replayed as a browser would: the cookie saved before sign-out (or a password
change, or "sign out everywhere", or removal) is sent again, to a page and to a state-changing
action with a CSRF token that was valid for it, and the row the action names is unchanged.
"""

import pytest
from sqlalchemy import select

from models.actions.tables import ScheduledAction
from models.accounts.tables import Membership
from models.core.database import read_session
from tests.web.conftest import PASSWORD, TOKEN, Browser, make_action


def _saved(browser, app):
    """The session cookie as a browser (or a thief) would keep it, and the CSRF token it carried."""
    cookie = browser.client.get_cookie(app.config.get("SESSION_COOKIE_NAME", "session"))
    return cookie.value, browser.token


def _replay(app, saved, action_id):
    """A fresh client sending only the saved cookie: a page, then a cancel with the saved CSRF token."""
    value, token = saved
    client = app.test_client()
    client.set_cookie(app.config.get("SESSION_COOKIE_NAME", "session"), value)
    page = client.get("/queue")
    cancel = client.post(f"/actions/{action_id}/cancel", data={"csrf_token": token})
    return page, cancel


def _status(app, action_id) -> str:
    with app.app_context(), read_session() as session:
        return session.get(ScheduledAction, action_id).status


def _signed_in(page) -> bool:
    return page.status_code == 200


def _refused(app, saved, action_id):
    page, cancel = _replay(app, saved, action_id)
    assert page.status_code == 302 and "/login" in page.headers["Location"], page.status_code
    assert cancel.status_code == 302 and "/login" in cancel.headers["Location"], cancel.status_code
    assert _status(app, action_id) == "queued"


def test_a_cookie_replayed_after_sign_out_opens_no_page_and_cancels_nothing(app, world, browser_for):
    row = make_action(app, world)
    ops = browser_for("ops")
    saved = _saved(ops, app)
    page, _ = _replay(app, saved, 0)  # the saved cookie works while the session lives
    assert _signed_in(page)
    assert ops.post("/logout").status_code == 303
    _refused(app, saved, row)


def test_signing_in_again_in_the_same_browser_ends_the_session_it_had(app, world, browser_for):
    row = make_action(app, world)
    browser = browser_for("ops")
    saved = _saved(browser, app)
    token = TOKEN.search(browser.client.get("/login").get_data(as_text=True) or "") or None
    answer = browser.client.post("/login", data={"email": "admin@acme.test", "password": PASSWORD,
                                                 "csrf_token": browser.token})
    assert answer.status_code == 303 and token is None  # signed in: /login sent it on, no form
    _refused(app, saved, row)


def test_a_password_change_ends_every_session_and_keeps_this_browser_signed_in(app, world, browser_for):
    row = make_action(app, world)
    here, elsewhere = browser_for("ops"), browser_for("ops")
    saved_here, saved_elsewhere = _saved(here, app), _saved(elsewhere, app)
    changed = here.post("/account/password", {"current_password": PASSWORD, "password": "a new long password",
                                              "confirm_password": "a new long password"})
    assert changed.status_code == 303
    _refused(app, saved_here, row)  # this browser's old cookie too: it was given a new session
    _refused(app, saved_elsewhere, row)
    page = here.client.get("/account")  # and this browser goes on, in its new session
    assert page.status_code == 200 and "1 other session signed out" in page.get_data(as_text=True)
    assert Browser(app.test_client(), None, world).sign_in("ops@acme.test", "a new long password").status_code == 303
    old = app.test_client()
    token = TOKEN.search(old.get("/login").get_data(as_text=True)).group(1)
    assert old.post("/login", data={"email": "ops@acme.test", "password": PASSWORD,
                                    "csrf_token": token}).status_code == 401


@pytest.mark.parametrize("form, field", [
    ({"current_password": "wrong password", "password": "a new long password",
      "confirm_password": "a new long password"}, "not your current password"),
    ({"current_password": PASSWORD, "password": "a new long password", "confirm_password": "another"}, "differ"),
    ({"current_password": PASSWORD, "password": "short", "confirm_password": "short"}, "at least 8 characters"),
])
def test_a_refused_password_change_says_why_and_ends_nothing(app, world, browser_for, form, field):
    row = make_action(app, world)
    ops = browser_for("ops")
    saved = _saved(ops, app)
    refused = ops.post("/account/password", form)
    assert refused.status_code == 422 and field in refused.get_data(as_text=True)
    page, _ = _replay(app, saved, 0)
    assert _signed_in(page) and _status(app, row) == "queued"


def test_sign_out_everywhere_ends_every_session_of_the_person_only(app, world, browser_for):
    row = make_action(app, world)
    here, elsewhere, admin = browser_for("ops"), browser_for("ops"), browser_for("admin")
    saved_here, saved_elsewhere = _saved(here, app), _saved(elsewhere, app)
    answer = here.post("/account/sign-out-everywhere")
    assert answer.status_code == 303 and answer.headers["Location"].endswith("/login")
    _refused(app, saved_here, row)
    _refused(app, saved_elsewhere, row)
    assert admin.client.get("/queue").status_code == 200  # another person's session goes on


def test_removing_a_member_ends_their_sessions_and_revokes_their_tokens_at_once(app, world, browser_for):
    row = make_action(app, world)
    ops, admin = browser_for("ops"), browser_for("admin")
    saved = _saved(ops, app)
    with app.app_context(), read_session() as session:
        membership = session.scalar(select(Membership.id).where(Membership.user_id == world.users["ops"]))
    assert admin.post(f"/members/{membership}/remove").status_code == 303
    _refused(app, saved, row)
    assert app.test_client().get("/api/v1/actions", headers=world.auth("ops")).status_code == 401


def test_deactivating_a_person_ends_their_sessions_and_tokens(app, world, browser_for):
    row = make_action(app, world)
    ops = browser_for("ops")
    saved = _saved(ops, app)
    result = app.test_cli_runner().invoke(args=["user", "deactivate", "ops@acme.test"])
    assert result.exit_code == 0 and "deactivated" in result.output
    _refused(app, saved, row)
    assert app.test_client().get("/api/v1/actions", headers=world.auth("ops")).status_code == 401


def test_set_password_on_the_command_line_ends_every_session(app, world, browser_for):
    row = make_action(app, world)
    ops = browser_for("ops")
    saved = _saved(ops, app)
    runner = app.test_cli_runner()
    done = runner.invoke(args=["user", "set-password", "OPS@acme.test"], input="another long password\n")
    assert done.exit_code == 0 and "1 session ended" in done.output, done.output
    _refused(app, saved, row)
    assert Browser(app.test_client(), None, world).sign_in("ops@acme.test", "another long password")
    short = runner.invoke(args=["user", "set-password", "ops@acme.test"], input="short\n")
    assert short.exit_code != 0 and "at least 8 characters" in short.output and "Traceback" not in short.output
    nobody = runner.invoke(args=["user", "set-password", "nobody@acme.test"], input="long enough pw\n")
    assert nobody.exit_code != 0 and "no user" in nobody.output


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_SESSION_IDLE_MINUTES=30)
    return app_config


def test_a_session_unused_for_the_idle_time_has_ended_and_use_keeps_it_alive(app, world, browser_for, clock):
    row = make_action(app, world, minutes=600)
    ops = browser_for("ops")
    saved = _saved(ops, app)
    for _ in range(3):  # used every 20 minutes: an hour later still signed in
        clock.advance(minutes=20)
        assert ops.client.get("/queue").status_code == 200
    clock.advance(minutes=30)
    _refused(app, saved, row)
    assert ops.client.get("/queue").status_code == 302


def test_a_bad_idle_setting_stops_the_start_naming_it(app_config):
    from models.core.errors import ConfigurationError
    from webapp import create_app

    for bad in ("0", "soon", "-5"):
        with pytest.raises(ConfigurationError, match="TICKWORK_SESSION_IDLE_MINUTES"):
            create_app(dict(app_config, TICKWORK_SESSION_IDLE_MINUTES=bad))
