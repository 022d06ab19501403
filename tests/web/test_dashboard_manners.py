"""How the dashboard speaks: messages carry their kind, buttons name their row, back and
forward get whole pages, and a role is not offered what it may not do."""

import re

from tests.web.conftest import HX, TOKEN


def text(answer) -> str:
    return answer.get_data(as_text=True)


def test_a_failed_sign_in_is_an_error_message_and_a_saved_change_a_success(app, world, browser_for):
    client = app.test_client()
    token = TOKEN.search(text(client.get("/login"))).group(1)
    failed = client.post("/login", data={"email": "ops@acme.test", "password": "nope", "csrf_token": token})
    assert failed.status_code == 401
    assert re.search(r'<p class="message error" role="alert">That email and password do not match.</p>', text(failed))
    admin = browser_for("admin")
    saved = admin.post("/channels", {"name": "news", "kind": "log", "settings": ""}, follow_redirects=True)
    assert re.search(r'<p class="message ok" role="status">Channel news saved.</p>', text(saved))


def test_going_back_to_an_htmx_page_gets_the_whole_page_not_a_fragment(acme, browser_for):
    ops = browser_for("ops")
    fragment = ops.get("/queue", htmx=True)
    restored = ops.client.get("/queue", headers={**HX, "HX-History-Restore-Request": "true"})
    assert "<html" not in text(fragment) and "<html" in text(restored)
    assert {"HX-Request", "HX-History-Restore-Request"} <= set(restored.vary)


def test_retry_is_offered_to_admins_only_and_every_row_button_names_its_row(acme, browser_for):
    for role, offered in (("marketer", False), ("ops", False), ("admin", True)):
        page = text(browser_for(role).get("/failures"))
        assert (f'aria-label="Retry #{acme.failed}, send_email to failed@example.test"' in page) is offered, role
    queue = text(browser_for("ops").get("/queue"))
    assert f'aria-label="Cancel #{acme.queued}, send_email to queued@example.test"' in queue
    assert f'aria-label="Reschedule #{acme.queued}, send_email to queued@example.test"' in queue
