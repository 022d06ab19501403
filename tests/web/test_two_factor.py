"""Two-factor sign-in (TOTP with recovery codes), optional for each person, and required of a workspace's admins
when an admin says so."""

import re

import pyotp
import pytest
from sqlalchemy import select

from models.accounts.tables import Membership
from models.core.database import read_session
from tests.web.conftest import PASSWORD, TOKEN, Browser


def text(answer) -> str:
    return answer.get_data(as_text=True)


def _turn_on(browser, clock) -> tuple[str, list[str]]:
    """Set up two-factor for the signed-in browser; returns the secret and the recovery codes."""
    begun = browser.post("/account/two-factor")
    assert begun.status_code == 200
    secret = re.search(r'id="totp-secret">([A-Z2-7]+)<', text(begun)).group(1)
    assert f"otpauth://totp/Tickwork:" in text(begun)
    wrong = browser.post("/account/two-factor/confirm", {"code": "000000"})
    assert wrong.status_code == 422 and "does not match" in text(wrong)
    done = browser.post("/account/two-factor/confirm", {"code": pyotp.TOTP(secret).at(clock.now())})
    assert done.status_code == 200
    codes = re.findall(r"<li><code>([0-9a-f]{5}-[0-9a-f]{5})</code></li>", text(done))
    assert len(codes) == 10
    clock.advance(seconds=30)  # the confirming code's time step is spent: the next sign-in needs the next code
    return secret, codes


def _password_step(client, email):
    token = TOKEN.search(client.get("/login").get_data(as_text=True)).group(1)
    return client.post("/login", data={"email": email, "password": PASSWORD, "csrf_token": token})


def _code_step(client, code):
    page = client.get("/login/two-factor")
    token = TOKEN.search(text(page)).group(1)
    return client.post("/login/two-factor", data={"code": code, "csrf_token": token})


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_SIGNIN_LIMIT_PER_ACCOUNT="5 per 10 minutes")
    return app_config


def test_with_two_factor_on_the_password_alone_signs_nobody_in_and_each_code_works_once(app, world, browser_for,
                                                                                        clock):
    secret, codes = _turn_on(browser_for("ops"), clock)
    client = app.test_client()
    answer = _password_step(client, "ops@acme.test")
    assert answer.status_code == 303 and answer.headers["Location"].endswith("/login/two-factor")
    assert client.get("/queue").status_code == 302  # not signed in yet
    assert _code_step(client, "123456").status_code == 401
    assert client.get("/queue").status_code == 302
    used = pyotp.TOTP(secret).at(clock.now())
    assert _code_step(client, used).status_code == 303
    assert client.get("/queue").status_code == 200
    # The same code, seen once, is never taken again (a code read over a shoulder is worth nothing).
    again = app.test_client()
    _password_step(again, "ops@acme.test")
    assert _code_step(again, used).status_code == 401
    clock.advance(seconds=30)
    assert _code_step(again, pyotp.TOTP(secret).at(clock.now())).status_code == 303
    # A recovery code works once, in place of the app's.
    for expected in (303, 401):
        other = app.test_client()
        _password_step(other, "ops@acme.test")
        assert _code_step(other, codes[0].upper()).status_code == expected


def test_the_second_step_waits_five_minutes_at_most(app, world, browser_for, clock):
    secret, _ = _turn_on(browser_for("ops"), clock)
    client = app.test_client()
    _password_step(client, "ops@acme.test")
    clock.advance(minutes=5, seconds=1)
    late = client.post("/login/two-factor", data={"code": pyotp.TOTP(secret).at(clock.now()),
                                                 "csrf_token": TOKEN.search(text(client.get("/login"))).group(1)})
    assert late.status_code == 302 and late.headers["Location"].endswith("/login")
    assert client.get("/queue").status_code == 302


def test_guessing_codes_is_limited_per_account(app, world, browser_for, clock):
    _turn_on(browser_for("ops"), clock)
    client = app.test_client()
    _password_step(client, "ops@acme.test")
    for n in range(5):
        assert _code_step(client, f"{n:06d}").status_code == 401
    assert _code_step(client, "999999").status_code == 429


def test_turning_it_off_needs_the_password_and_new_recovery_codes_replace_the_old(app, world, browser_for, clock):
    ops = browser_for("ops")
    _, codes = _turn_on(ops, clock)
    assert ops.post("/account/two-factor/off", {"current_password": "wrong"}).status_code == 422
    fresh = ops.post("/account/two-factor/recovery-codes", {"current_password": PASSWORD})
    assert fresh.status_code == 200
    new_codes = re.findall(r"<li><code>([0-9a-f]{5}-[0-9a-f]{5})</code></li>", text(fresh))
    assert len(new_codes) == 10 and not set(codes) & set(new_codes)
    client = app.test_client()
    _password_step(client, "ops@acme.test")
    assert _code_step(client, codes[1]).status_code == 401  # an old code stopped working
    assert _code_step(client, new_codes[1]).status_code == 303
    assert ops.post("/account/two-factor/off", {"current_password": PASSWORD}).status_code == 303
    assert _password_step(app.test_client(), "ops@acme.test").headers["Location"].endswith("/")


def _promote(app, world, role, to):
    from models.core.database import write_session

    with app.app_context(), write_session() as session:
        session.scalar(select(Membership).where(Membership.user_id == world.users[role])).role = to


def test_a_workspace_can_require_two_factor_of_its_admins(app, world, browser_for, clock):
    admin = browser_for("admin")
    refused = admin.post("/settings/two-factor", {"required": "1"})
    assert refused.status_code == 409 and "turn on two-factor sign-in for yourself first" in text(refused)
    secret, _ = _turn_on(admin, clock)
    assert admin.post("/settings/two-factor", {"required": "1"}).status_code == 303
    _promote(app, world, "ops", "admin")
    other = browser_for("ops")  # an admin now, without two-factor
    blocked = other.get("/queue")
    assert blocked.status_code == 403 and "requires two-factor sign-in for its admins" in text(blocked)
    assert other.post("/members", {"email": "x@example.test", "role": "admin"}).status_code == 403
    assert other.get("/account").status_code == 200  # where it is set up
    assert other.post("/account/tokens", {"name": "a way around", "expires_in_days": "7"}).status_code == 403
    _turn_on(other, clock)
    assert other.get("/queue").status_code == 200
    # Marketers are not asked; and an admin cannot turn it off while it is required.
    assert browser_for("marketer").get("/calendar").status_code == 200
    kept = admin.post("/account/two-factor/off", {"current_password": PASSWORD})
    assert kept.status_code == 409 and "requires two-factor sign-in for its admins" in text(kept)
    with app.app_context(), read_session() as session:
        assert session.scalar(select(Membership.id).where(Membership.user_id == world.users["ops"])) is not None
