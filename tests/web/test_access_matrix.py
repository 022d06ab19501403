"""Access, exhaustively, from the url map: every object route with another workspace's ids, and every state-changing
route under every role.

Routes are read from ``app.url_map`` (as the CSRF test does), so a route added later is tried
by both tests, or fails them until it says which id kind it takes and which role it needs. The
public routes (``webapp/public.py``) are the only exemptions: they carry checks of their own.
Nothing may change when a request is refused: the whole database is compared before and after.
"""

import json
import re

import pytest

from tests.conftest import add_member_with_token, make_world
from tests.web.access_world import BASE_URL, changed_tables, furnish, snapshot
from tests.web.conftest import HX
from tests.web.walking import (
    SIGNS_OUT, STATE_CHANGING, SignedIn, concrete, methods_of, parameters_of, reached_the_view, report, walked_rules,
)

ROLES = ("marketer", "ops", "admin", "reviewer")
# Who each line of the table below lets through (models/accounts/permissions.py): marketer, ops and admin each
# include the one before; a reviewer reads what a marketer reads, approves, reviews and comments, nothing else.
ALLOWS = {"member": set(ROLES), "marketer": {"marketer", "ops", "admin"}, "ops": {"ops", "admin"},
          "admin": {"admin"}, "review": {"admin", "reviewer"}}

# Who may use each state-changing route, written out from docs/dashboard.md's tables ("who may do what": the API
# keeps the same rules) and the brief's table for minted rows: "member" is every role (one's own account,
# approving while review is off, comments), "marketer" whoever composes. A new state-changing route fails the
# matrix until it has a line here.
LEAST_ROLE = {
    # the front door
    "pages.login": "anyone", "pages.logout": "member", "pages.switch_workspace": "member",
    # a person's own account: every member may change their password and end their sessions
    "account.password": "member", "account.logout_everywhere": "member",
    "account.create_token": "member", "account.revoke_token": "member",
    "account.accept_invitation": "member", "account.decline_invitation": "member",
    "members.revoke_invitation": "admin",
    "account.two_factor_begin": "member", "account.two_factor_confirm": "member",
    "account.two_factor_off": "member", "account.recovery_codes": "member",
    "pages.two_factor": "anyone", "settings.two_factor": "admin",
    # rows: a marketer cancels post rows and their own; this one was created by nobody in particular
    "actions.cancel": "ops", "actions.reschedule": "ops", "actions.retry": "admin", "actions.post_now": "marketer",
    "calendar.move": "marketer",
    "queue.bulk_cancel": "ops", "queue.bulk_reschedule": "ops", "queue.bulk_retry": "admin",
    "posts.create": "marketer", "posts.update": "marketer", "posts.approve": "member", "posts.unapprove": "marketer",
    "posts.archive": "marketer", "posts.send_now": "marketer",
    "channels.create": "admin", "channels.update": "admin", "channels.test_send": "admin",
    "channels.connect": "admin", "channels.save_posting_times": "ops",
    "members.add": "admin", "members.role": "admin", "members.remove": "admin",
    "settings.timezone": "admin",
    "notifications.read": "member", "notifications.settings": "admin",
    "recurring.create": "marketer", "recurring.update": "marketer", "recurring.pause": "marketer",
    "recurring.resume": "marketer", "recurring.run": "marketer", "recurring.end": "ops",
    "campaigns.create": "marketer", "campaigns.update": "marketer", "campaigns.activate": "marketer",
    "campaigns.pause": "marketer", "campaigns.preview": "marketer", "campaigns.enroll": "marketer",
    "campaigns.upload": "marketer", "campaigns.commit_upload": "marketer", "campaigns.archive": "ops",
    "campaigns.new_steps": "marketer", "campaigns.steps": "marketer",
    "campaigns.remove": "ops",
    "contacts.create": "marketer", "contacts.update": "marketer", "contacts.unsubscribe": "marketer",
    "works.create": "ops", "works.delete": "ops", "works.pause": "ops", "works.resume": "ops", "works.run": "ops",
    "works.save_schedule": "ops",
    "posts.import_upload": "marketer", "posts.import_commit": "marketer",
    # a person's own calendar feed address: every member may make and revoke theirs
    "feeds.make_feed": "member", "feeds.revoke_feed": "member",
    # alerts: ops act on them, admins choose where they go and the rules; each member chooses their own
    "alerts.acknowledge": "ops", "alerts.silence": "ops", "alerts.add_destination": "admin",
    "alerts.remove_destination": "admin", "alerts.save_rule": "admin", "alerts.save_preferences": "member",
    # the API: the same rules, by bearer token
    "api_actions.create": "marketer", "api_actions.cancel": "ops", "api_actions.reschedule": "ops",
    "api_actions.retry": "admin", "api_channels.put_slots": "ops",
    "api_posts.create": "marketer", "api_posts.update": "marketer", "api_posts.approve": "member",
    "api_posts.unapprove": "marketer", "api_posts.archive": "marketer", "api_posts.send_now": "marketer",
    "api_recurring.create": "marketer", "api_recurring.update": "marketer", "api_recurring.pause": "marketer",
    "api_recurring.resume": "marketer", "api_recurring.run": "marketer", "api_recurring.end": "ops",
    "api_drips.create_campaign": "marketer", "api_drips.update_campaign": "marketer", "api_drips.activate": "marketer",
    "api_drips.pause": "marketer", "api_drips.resume": "marketer", "api_drips.enroll": "marketer",
    "api_drips.enroll_csv": "marketer", "api_drips.commit_import": "marketer", "api_drips.archive": "ops",
    "api_drips.remove": "ops", "api_drips.create_contact": "marketer", "api_drips.update_contact": "marketer",
    "api_drips.unsubscribe": "marketer",
    "api_works.create": "ops", "api_works.remove": "ops",
    "api_post_imports.posts_csv": "marketer", "api_post_imports.commit_posts": "marketer",
    "api_work_schedules.put": "ops", "api_work_schedules.delete": "ops", "api_work_schedules.run": "ops",
    # the media library: every member adds, describes and removes items
    "media.upload": "marketer", "media.describe": "marketer", "media.delete": "marketer",
    "api_media.create": "marketer", "api_media.update": "marketer", "api_media.delete": "marketer",
    # one's own token; an admin's, anyone's in the workspace (another's is not found)
    "api_tokens.revoke": "member",
    # review: whoever composes submits; admins and reviewers decide and make links; every member comments
    "post_review.submit": "marketer", "post_review.request_changes": "review", "post_review.comment": "member",
    "post_review.make_review_link": "review", "post_review.revoke_review_link": "review",
    "api_post_review.submit": "marketer", "api_post_review.request_changes": "review",
    "api_post_review.add_comment_route": "member", "api_post_review.create_link": "review",
    "api_post_review.revoke_link_route": "review",
    "settings.review": "admin", "api_workspace.update": "admin",
}
PARAMETER_TOKENS = re.compile(r"<[^>]+>")
# Routes that end what they act on go last, so the routes before them find it still there.
ENDS_THINGS = ("remove", "delete", "archive", "end", "unsubscribe", "logout")
# Ids a route reads from its query string or form rather than its path.
CARRIED_IDS = {
    "calendar.move_form": ("query", "post", "post_id"),
    "calendar.move_preview": ("query", "post", "post_id"),
    "calendar.move": ("form", "post", "post_id"),
    "campaigns.enroll": ("form", "contact", "contact_id"),
    "api_drips.enroll": ("json", "contact_id", "contact_id"),
}
# Which row a route about rows is tried on, when the queued one would not tell (retry needs a failed row).
ROW_FOR = {"actions.retry": "failed", "api_actions.retry": "failed", "actions.post_now": "post_row"}


def plausible_form(ids: dict) -> dict:
    """A form that would change something on most routes, so a refusal is a refusal of a real change."""
    return {"date": "2026-06-20", "time": "10:00", "body": "Hello again", "targets": "main", "name": "renamed",
            "kind": "log", "email": "newcomer@example.test", "password": "a long password", "role": "ops",
            "note": "why not", "confirm": "yes", "zone": "Europe/Paris", "intent": "change", "target": "me",
            "shift": "+1h", "cadence": "daily", "enable": "1", "rrule": "FREQ=WEEKLY", "repeat": "daily",
            "starts_local": "2026-06-03T09:00", "pipeline": "log", "phone": "+15555550123",
            "contact": str(ids["contact_id"]), "post": str(ids["post_id"]), "subject": "Hi", "step_count": "1",
            "channel": "main", "action_type": "send_email", "target_key": "x@example.test", "status": "draft",
            "hours": "4", "recipient": "ops-room", "rule": "channel_failures", "threshold": "20",
            "delivery-channel_failures": "digest", "comment": "Say which bakery", "reviewer_name": "Dana",
            "review": "off"}


# A valid body for each API route that takes one (the API refuses fields it does not know); others get none.
def plausible_json(endpoint: str, ids: dict) -> dict | None:
    return {
        "api_actions.create": {"action_type": "send_email", "channel": "main", "target_key": "x@example.test",
                               "payload": {"subject": "Hi"}, "publish_at": "2026-06-20T10:00:00Z"},
        "api_actions.reschedule": {"publish_at": "2026-06-20T10:00:00Z"},
        "api_posts.create": {"body": "Hello", "targets": ["main"], "local_date": "2026-06-20", "local_time": "10:00"},
        "api_posts.update": {"body": "Hello again"},
        "api_recurring.create": {"action_type": "send_email", "channel": "main", "target_key": "x@example.test",
                                 "payload": {"subject": "Hi"}, "rrule": "FREQ=WEEKLY",
                                 "starts_local": "2026-06-03T09:00"},
        "api_recurring.update": {"rrule": "FREQ=WEEKLY"},
        "api_recurring.pause": {"note": "why not"},
        "api_recurring.end": {"note": "why not"},
        "api_drips.create_campaign": {"name": "Another", "channel": "main",
                                      "steps": [{"delay": "PT0S", "subject": "Hi", "body": "Hello"}]},
        "api_drips.update_campaign": {"name": "renamed"},
        "api_drips.enroll": {"contact_id": ids["contact_id"]},
        "api_drips.create_contact": {"email": "newcomer@example.test"},
        "api_drips.update_contact": {"name": "Renamed"},
        "api_works.create": {"name": "Another", "pipeline": "log"},
        "api_work_schedules.put": {"cadence": "weekly"},
        "api_media.update": {"alt": "A green square"},
        "api_channels.put_slots": {"slots": [{"days": ["mon"], "time": "09:00"}]},
        "api_post_review.request_changes": {"comment": "Say which bakery"},
        "api_post_review.add_comment_route": {"body": "Looks good"},
        "api_post_review.create_link": {"reviewer_name": "Dana"},
        "api_workspace.update": {"review": "off"},
    }.get(endpoint)


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_BASE_URL=BASE_URL, TICKWORK_API_RATE_LIMIT="100000 per minute")
    return app_config


def _send(browser, world, role, rule, method, url, ids, *, query=None, form_extra=None, json_extra=None,
          htmx=False):
    """One request as ``role``: the dashboard with a CSRF token, the API with the role's bearer token."""
    if rule.rule.startswith("/api/"):
        body = plausible_json(rule.endpoint, ids)
        if json_extra:
            body = {**(body or {}), **json_extra}
        kwargs = {} if body is None else {"data": json.dumps(body), "content_type": "application/json"}
        return browser.client.open(url, method=method, query_string=query, headers=world.auth(role), **kwargs)
    if method == "GET":
        return browser.client.get(url, query_string=query, headers=HX if htmx else {})
    form = {**plausible_form(ids), **(form_extra or {})}
    if htmx:
        return browser.client.open(url, method=method, data=form, query_string=query,
                                   headers={**HX, "X-CSRFToken": browser.token})
    return browser.client.open(url, method=method, data={**form, "csrf_token": browser.token}, query_string=query)


# -- another workspace's ids ------------------------------------------------------------------


def test_another_workspaces_ids_are_not_found_and_change_nothing(app, world):
    ours = furnish(app, world, "ours")
    theirs = furnish(app, make_world(app, name="Globex", zone="Europe/Paris"), "theirs")
    admin = SignedIn(app, "admin", world).fresh()  # the highest role: only the workspace can refuse
    tried, kinds = [], set()
    before = snapshot(app)
    for rule in walked_rules(app):
        carried = CARRIED_IDS.get(rule.endpoint)
        parameters = parameters_of(rule)
        if not parameters and not carried:
            continue
        unknown = [p for p in parameters if p not in theirs.ids]
        assert not unknown, f"{rule.rule} takes an id kind the matrix does not furnish: {unknown}"
        kinds.update(parameters)
        for method in methods_of(rule):
            cases = []
            if parameters:
                cases.append(("path", concrete(rule, theirs.ids), {}))
            if len(parameters) > 1:  # one id of theirs among ours: each is checked, not only the first
                cases += [(f"path:{p}", concrete(rule, ours.ids, **{p: theirs.ids[p]}), {}) for p in parameters]
            if carried:
                where, field, kind = carried
                kinds.add(kind)
                carried_value = theirs.ids[kind] if where == "json" else str(theirs.ids[kind])
                cases.append((where, concrete(rule, ours.ids), {where: {field: carried_value}}))
            for where, url, extra in cases:
                for htmx in ((False,) if rule.rule.startswith("/api/") else (False, True)):
                    answer = _send(admin, world, "admin", rule, method, url, ours.ids, query=extra.get("query"),
                                   form_extra=extra.get("form"), json_extra=extra.get("json"), htmx=htmx)
                    assert reached_the_view(answer, api=rule.rule.startswith("/api/")) is None, (method, url)
                    assert answer.status_code == 404, (method, rule.rule, where, htmx, answer.status_code,
                                                       answer.get_data(as_text=True)[:400])
                    tried.append((method, rule.rule, where, htmx))
            # Compared once per route and method, after all its requests: nothing changes, so each route's
            # "after" is the next one's "before".
            assert changed_tables(before, snapshot(app)) == [], (method, rule.rule)
    # Every id kind a route takes was tried, so the list above cannot quietly shrink.
    assert kinds >= {"action_id", "post_id", "channel_id", "channel_name", "membership_id", "contact_id", "campaign_id",
                     "enrollment_id", "rule_id", "work_id", "import_id", "alert_id", "destination_id", "media_id",
                     "link_id"}, kinds
    report("cross_workspace", requests=len(tried), routes=len({(m, r) for m, r, *_ in tried}), workspaces=2,
           id_kinds=sorted(kinds), server_errors=0)


# -- every role -------------------------------------------------------------------------------


def _state_changing(app):
    pairs = [(rule, method) for rule in walked_rules(app) for method in methods_of(rule) if method in STATE_CHANGING]
    return sorted(pairs, key=lambda pair: (pair[0].endpoint.rsplit(".", 1)[1].startswith(ENDS_THINGS),
                                           pair[0].rule, pair[1]))


@pytest.mark.only_backend("sqlite")
def test_every_state_changing_route_under_every_role_is_allowed_or_refused_as_the_table_says(app, world):
    pairs = _state_changing(app)
    missing = sorted({rule.endpoint for rule, _ in pairs} - set(LEAST_ROLE))
    assert not missing, f"state-changing routes with no line in the role table: {missing}"
    stale = sorted(set(LEAST_ROLE) - {rule.endpoint for rule, _ in pairs})
    assert not stale, f"role table lines for routes that are gone: {stale}"
    tried = refused = 0
    wrong = []
    add_member_with_token(app, world, "reviewer")
    sessions = {role: SignedIn(app, role, world) for role in ROLES}
    for role in ROLES:
        mine = furnish(app, world, role)  # each role acts on objects of its own, in their first state
        before = None
        ids = {**mine.ids, "failed": mine.extra["failed"], "post_row": mine.extra["post_row"]}
        for rule, method in pairs:
            least = LEAST_ROLE[rule.endpoint]
            if least == "anyone":
                continue
            api = rule.rule.startswith("/api/")
            browser = sessions[role].fresh()  # signed in afresh: logout cannot end the walk
            url = concrete(rule, ids, action_id=ids[ROW_FOR.get(rule.endpoint, "action_id")])
            allowed = role in ALLOWS[least]
            if not allowed and before is None:
                before = snapshot(app)
            answer = _send(browser, world, role, rule, method, url, ids,
                           form_extra={"workspace_id": str(world.workspace_id)})
            tried += 1
            if rule.endpoint in SIGNS_OUT:
                sessions[role].renew()  # that session has ended for good: the walk goes on in a new one
            body = answer.get_data(as_text=True)
            why = reached_the_view(answer, api=api, endpoint=rule.endpoint)
            if why or answer.status_code >= 500:
                wrong.append((role, method, rule.rule, answer.status_code, why or body[:300]))
                continue
            if allowed:
                before = None  # it may have changed something: the next refusal takes a fresh snapshot
            if allowed and answer.status_code == 403:
                wrong.append((role, method, rule.rule, "refused, but the table allows", body[:200]))
            if not allowed:
                refused += 1
                if answer.status_code != 403:
                    wrong.append((role, method, rule.rule, f"answered {answer.status_code}; the table refuses",
                                  body[:200]))
                after = snapshot(app)
                changed = changed_tables(before, after)
                before = after
                if changed:
                    wrong.append((role, method, rule.rule, "refused but changed", changed))
    assert not wrong, "\n".join(map(str, wrong))
    report("roles", requests=tried, refused=refused, routes=len(pairs), roles=len(ROLES), server_errors=0)


# -- ids no row could have --------------------------------------------------------------------

IMPOSSIBLE_IDS = {"past bigint": "9" * 25, "zero": "0", "past int": str(2**31)}


def test_ids_no_row_could_have_are_not_found_on_either_database(app, world):
    """An id past any integer column's range is a 404 like any other missing row, never a database error."""
    admin = SignedIn(app, "admin", world).fresh()
    tried = 0
    for rule in walked_rules(app):
        if not any(p.startswith("<int:") for p in PARAMETER_TOKENS.findall(rule.rule)):
            continue
        for method in methods_of(rule):
            for label, value in IMPOSSIBLE_IDS.items():
                url = PARAMETER_TOKENS.sub(lambda m: value if m.group(0).startswith("<int:") else "x", rule.rule)
                answer = _send(admin, world, "admin", rule, method, url, {"contact_id": 1, "post_id": 1})
                assert reached_the_view(answer, api=rule.rule.startswith("/api/")) is None, (method, url)
                assert answer.status_code == 404, (method, url, label, answer.get_data(as_text=True)[:300])
                tried += 1
    report("impossible_ids", requests=tried, server_errors=0)
