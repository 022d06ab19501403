"""Members (admin): add, change role, remove; the last admin stays."""

import re

from tests.web.conftest import PASSWORD, Browser


def text(answer) -> str:
    return answer.get_data(as_text=True)


def membership_ids(page: str) -> dict[str, int]:
    return {email: int(ident) for ident, email in
            re.findall(r'action="/members/(\d+)/role">.*?Role of ([^<]+)</label>', page, re.S)}


def test_an_admin_adds_a_new_person_who_can_then_sign_in(app, world, browser_for):
    admin = browser_for("admin")
    added = admin.post("/members", {"email": "New.Person@acme.test", "role": "ops", "password": "long enough pw"})
    assert added.status_code == 303
    page = text(admin.get("/members"))
    assert "new.person@acme.test" in page  # among the invitations waiting for an answer
    newcomer = Browser(app.test_client(), None, world)
    newcomer.sign_in("new.person@acme.test", "long enough pw")
    assert newcomer.client.get("/health").status_code == 403  # invited, not yet a member
    account = text(newcomer.client.get("/account"))
    invitation = re.search(r'action="/account/invitations/(\d+)/accept"', account).group(1)
    assert newcomer.post(f"/account/invitations/{invitation}/accept").status_code == 303
    assert newcomer.client.get("/health").status_code == 200  # ops


def test_role_changes_and_removal_keep_an_admin(app, world, browser_for):
    admin = browser_for("admin")
    ids = membership_ids(text(admin.get("/members")))
    last = admin.post(f"/members/{ids['admin@acme.test']}/role", {"role": "ops"})
    assert last.status_code == 409 and "last admin" in text(last)
    assert admin.post(f"/members/{ids['admin@acme.test']}/remove").status_code == 409
    promoted = admin.post(f"/members/{ids['ops@acme.test']}/role", {"role": "admin"})
    assert promoted.status_code == 303
    ops = Browser(app.test_client(), None, world)
    ops.sign_in("ops@acme.test", PASSWORD)
    assert ops.client.get("/channels").status_code == 200
    removed = admin.post(f"/members/{ids['marketer@acme.test']}/remove")
    assert removed.status_code == 303
    assert "marketer@acme.test" not in membership_ids(text(admin.get("/members")))


def test_member_form_refuses_bad_input(world, browser_for):
    admin = browser_for("admin")
    for data, status, words in (
        ({"email": "not-an-email", "role": "ops"}, 422, "email address"),
        ({"email": "x@acme.test", "role": "owner"}, 422, "is not a role"),
        ({"email": "x@acme.test", "role": "ops", "password": "short"}, 422, "at least 8"),
        ({"email": "ops@acme.test", "role": "ops"}, 409, "already a member"),
    ):
        answer = admin.post("/members", data)
        assert answer.status_code == status and words in text(answer), (data, text(answer)[:300])
    assert admin.post("/members/9999/role", {"role": "ops"}).status_code == 404
    assert browser_for("ops").post("/members", {"email": "y@acme.test", "role": "admin"}).status_code == 403
