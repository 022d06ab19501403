"""Adding a person makes an invitation they must accept, through a signed, expiring link or their Account page;
the admin's answer is the same whether or not the email has an account on this Tickwork."""

import re

from sqlalchemy import select

from models.accounts.tables import Membership
from models.core.database import read_session
from tests.conftest import make_world
from tests.web.conftest import PASSWORD, Browser


def text(answer) -> str:
    return answer.get_data(as_text=True)


def _memberships(app, user_id) -> dict:
    with app.app_context(), read_session() as session:
        return dict(session.execute(select(Membership.workspace_id, Membership.role)
                                    .where(Membership.user_id == user_id)).all())


def _signed_in_as(app, world, email):
    browser = Browser(app.test_client(), None, world)
    browser.sign_in(email, PASSWORD)
    return browser


def _link(page: str, email: str) -> str:
    return re.search(r'value="(http[^"]+/invitations/[^"]+)" aria-label="Invitation link for ' + re.escape(email),
                     page).group(1)


def test_an_existing_person_is_invited_not_added_and_joins_only_by_accepting(app, world, browser_for):
    globex = make_world(app, name="Globex", zone="Europe/Paris")
    admin = browser_for("admin")
    assert admin.post("/members", {"email": "Admin@Globex.test", "role": "admin"}).status_code == 303
    assert _memberships(app, globex.users["admin"]) == {globex.workspace_id: "admin"}  # not in Acme yet
    them = _signed_in_as(app, world, "admin@globex.test")
    refused = them.post("/workspace", {"workspace_id": str(world.workspace_id)})
    assert refused.status_code == 403
    account = text(them.get("/account"))
    assert "invites you to <strong>Acme</strong>" in account and "admin@acme.test" in account
    invitation = re.search(r'action="/account/invitations/(\d+)/accept"', account).group(1)
    # Nobody else may answer it, the inviting admin included.
    assert admin.post(f"/account/invitations/{invitation}/accept").status_code == 404
    joined = them.post(f"/account/invitations/{invitation}/accept")
    assert joined.status_code == 303
    assert _memberships(app, globex.users["admin"]) == {globex.workspace_id: "admin", world.workspace_id: "admin"}
    assert them.post(f"/account/invitations/{invitation}/accept").status_code == 409  # answered
    assert "admin@globex.test" not in text(admin.get("/members")).split("Invitations waiting")[1]


def test_the_admin_sees_the_same_answer_whether_or_not_the_email_has_an_account(app, world, browser_for):
    make_world(app, name="Globex", zone="Europe/Paris")
    admin = browser_for("admin")
    answers = {}
    for email in ("ops@globex.test", "nobody@globex.test"):
        for password in ("", "an initial password"):
            given = admin.post("/members", {"email": email, "role": "ops", "password": password})
            followed = admin.get(given.headers["Location"])
            answers[(email, password)] = (given.status_code, given.headers["Location"],
                                          re.sub(r"[\w.]+@globex\.test", "EMAIL", _flash(text(followed))))
    assert len(set(answers.values())) == 1, answers
    page = text(admin.get("/members"))
    rows = re.findall(r"<tr><td>([\w.]+@globex\.test)</td><td>(\w+)</td>", page)
    assert rows == [("nobody@globex.test", "ops"), ("ops@globex.test", "ops")]
    # The existing account's password was not touched by the "initial password".
    assert _signed_in_as(app, world, "ops@globex.test")


def _flash(page: str) -> str:
    return " ".join(re.findall(r'<p class="message ok" role="status">([^<]*)</p>', page))


def test_the_signed_link_shows_the_invitation_and_expires(app, world, browser_for, clock):
    make_world(app, name="Globex", zone="Europe/Paris")
    admin = browser_for("admin")
    admin.post("/members", {"email": "marketer@globex.test", "role": "marketer"})
    link = _link(text(admin.get("/members")), "marketer@globex.test")
    path = link.split("://", 1)[1].split("/", 1)[1]
    anonymous = app.test_client().get("/" + path)
    assert anonymous.status_code == 200 and "Sign in as marketer@globex.test" in text(anonymous)
    assert anonymous.headers["Referrer-Policy"] == "no-referrer"
    assert "/accept" not in text(anonymous)
    mine = _signed_in_as(app, world, "marketer@globex.test").get("/" + path)
    assert "Join Acme as marketer" in text(mine)
    assert "Join Acme" not in text(admin.get("/" + path)).split("</h1>")[1]  # the admin cannot answer it
    forged = "/" + path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB")
    assert app.test_client().get(forged).status_code == 404
    assert app.test_client().get("/invitations/1").status_code == 404
    clock.advance(days=7, seconds=1)
    gone = app.test_client().get("/" + path)
    assert gone.status_code == 404 and "not valid any more" in text(gone)


def test_a_declined_or_withdrawn_invitation_cannot_be_accepted(app, world, browser_for):
    globex = make_world(app, name="Globex", zone="Europe/Paris")
    admin = browser_for("admin")
    for email in ("ops@globex.test", "marketer@globex.test"):
        admin.post("/members", {"email": email, "role": "ops"})
    them = _signed_in_as(app, world, "ops@globex.test")
    invitation = re.search(r'/account/invitations/(\d+)/accept', text(them.get("/account"))).group(1)
    assert them.post(f"/account/invitations/{invitation}/decline").status_code == 303
    assert them.post(f"/account/invitations/{invitation}/accept").status_code == 409
    members_page = text(admin.get("/members"))
    withdrawn = re.search(r'/members/invitations/(\d+)/revoke', members_page).group(1)
    link = _link(members_page, "marketer@globex.test")
    assert admin.post(f"/members/invitations/{withdrawn}/revoke").status_code == 303
    other = _signed_in_as(app, world, "marketer@globex.test")
    assert other.post(f"/account/invitations/{withdrawn}/accept").status_code == 409
    assert app.test_client().get("/" + link.split("://", 1)[1].split("/", 1)[1]).status_code == 404
    assert _memberships(app, globex.users["ops"]) == {globex.workspace_id: "ops"}
    assert _memberships(app, globex.users["marketer"]) == {globex.workspace_id: "marketer"}
    assert browser_for("ops").post(f"/members/invitations/{withdrawn}/revoke").status_code == 403


def test_a_hostile_invitation_link_is_not_found_never_a_500(app, world):
    from urllib.parse import quote

    from tests.web.test_hostile_input import HOSTILE

    client = app.test_client()
    for name, value in HOSTILE.items():
        answer = client.get("/invitations/" + quote(value, safe="", errors="surrogatepass"))
        assert answer.status_code == 404, (name, answer.status_code)


def test_an_invitation_may_offer_the_reviewer_role_and_the_reviewer_joins_with_it(app, world, browser_for):
    globex = make_world(app, name="Globex", zone="Europe/Paris")
    admin = browser_for("admin")
    assert 'value="reviewer"' in text(admin.get("/members"))
    assert admin.post("/members", {"email": "ops@globex.test", "role": "reviewer"}).status_code == 303
    them = _signed_in_as(app, world, "ops@globex.test")
    invitation = re.search(r'action="/account/invitations/(\d+)/accept"', text(them.get("/account"))).group(1)
    assert them.post(f"/account/invitations/{invitation}/accept").status_code == 303
    assert _memberships(app, globex.users["ops"])[world.workspace_id] == "reviewer"
