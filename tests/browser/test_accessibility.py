"""axe-core on every dashboard page, signed in as each role, on pages seeded with every status:
zero WCAG 2.1 A and AA violations. Best-practice findings are collected, not failed on; set
``TICKWORK_AXE_REPORT=path`` to write them out for triage."""

import json
import os
import pytest

from models.core.database import write_session
from tests.web.conftest import claim_and, make_action, make_post, rows_of_post

pytestmark = pytest.mark.browser

WCAG = {"wcag2a", "wcag2aa", "wcag21a", "wcag21aa"}
RUN = """async () => {
  const result = await axe.run(document, {
    runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']},
    resultTypes: ['violations'],
  });
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, tags: v.tags, help: v.help,
    nodes: v.nodes.slice(0, 4).map(n => n.target.join(' ') + ' :: ' + (n.failureSummary || '').split('\\n').slice(0, 2).join(' ')),
  }));
}"""
FINDINGS: dict = {}


@pytest.fixture(scope="module")
def seeded(live):
    """Every status on screen: a draft, a queued post, a submitted, a published, a failed and a cancelled row."""
    app, world = live.app, live.world
    draft = make_post(app, world, body="A draft for the audit", day="2026-06-16", at="10:00", approve=False)
    post = make_post(app, world, body="A queued post for the audit", day="2026-06-16", at="11:00")
    submitted = make_action(app, world, minutes=-1, target="audit-submitted@example.test")
    claim_and(app, submitted, "submitted")
    failed = make_action(app, world, minutes=-2, target="audit-failed@example.test")
    claim_and(app, failed, "failed", message="mailbox unavailable (550)")
    published = make_action(app, world, minutes=-3, target="audit-sent@example.test")
    claim_and(app, published, "published")
    cancelled = make_action(app, world, minutes=24 * 60, target="audit-cancelled@example.test")
    queued = make_action(app, world, minutes=25 * 60, target="audit-queued@example.test")
    from models.actions import lifecycle
    from models.actions.tables import CancelKind
    from models.core.moves import Actor

    with app.app_context(), write_session() as session:
        lifecycle.cancel(session, cancelled, kind=CancelKind.PERSON, now=live.clock.now(), actor=Actor(label="user:test"),
                         workspace_id=world.workspace_id, reason="audit")
    with app.app_context():
        from models.core.database import read_session
        from models.channels.tables import Channel
        from sqlalchemy import select

        with read_session() as session:
            channel = session.scalar(select(Channel.id).where(Channel.workspace_id == world.workspace_id))
    return type("Seeded", (), dict(draft=draft, post=post, post_row=rows_of_post(app, world, post)[0].id,
                                   submitted=submitted, failed=failed, channel=channel, published=published,
                                   queued=queued))


def pages_for(role: str, s) -> list[str]:
    pages = ["/calendar?cancelled=1", "/calendar?view=week&date=2026-06-15&cancelled=1", "/queue",
             "/queue?status=submitted", "/failures", "/posts/new?date=2026-06-20", f"/posts/{s.draft}",
             f"/posts/{s.post}", f"/actions/{s.failed}", f"/actions/{s.submitted}", f"/actions/{s.published}",
             f"/calendar/move?post={s.post}", "/posts/import", "/account"]
    if role in ("ops", "admin"):
        pages += ["/health", "/queue/bulk-cancel", "/queue/bulk-reschedule?shift=%2B1h"]
    if role == "admin":
        pages += ["/failures/bulk-retry", "/channels", f"/channels/{s.channel}", "/members", "/settings"]
    return pages


def audit(page, url: str, label: str) -> list[str]:
    """Run axe on the page at ``url``; returns its WCAG violations as lines, and files the rest.

    axe is already in the page: :func:`with_axe` adds it to every document of the context."""
    page.goto(url, wait_until="load")
    wcag = []
    for violation in page.evaluate(RUN):
        line = f"{label} {url}: {violation['id']} ({violation['impact']}) {violation['help']} {violation['nodes']}"
        if WCAG & set(violation["tags"]):
            wcag.append(line)
        else:
            FINDINGS.setdefault(violation["id"], []).append(line)
    return wcag


def with_axe(page, axe_source):
    page.context.add_init_script(axe_source)
    return page


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    path = os.environ.get("TICKWORK_AXE_REPORT")
    if path:
        with open(path, "w") as out:
            json.dump(FINDINGS, out, indent=2)


def test_signed_out_pages_have_no_wcag_violations(chromium, live, axe_source):
    context = chromium.new_context(base_url=live.url, bypass_csp=True)
    try:
        assert audit(with_axe(context.new_page(), axe_source), "/login", "signed out") == []
    finally:
        context.close()


@pytest.mark.parametrize("role", ["marketer", "ops", "admin"])
def test_every_page_has_no_wcag_violations_for_each_role(role, open_as, axe_source, seeded):
    page = with_axe(open_as(role, bypass_csp=True), axe_source)
    found = []
    for url in pages_for(role, seeded):
        found += audit(page, url, role)
    # The row widget's other states: the inline reschedule form, and a refusal written on the row.
    if role != "marketer":
        page.goto("/queue?q=audit-queued")
        page.locator(f"#action-{seeded.queued}").get_by_role("button", name="Reschedule").click()
        page.wait_for_selector("form.reschedule")
        found += [f"{role} reschedule form: {v['id']} {v['nodes']}" for v in page.evaluate(RUN) if WCAG & set(v["tags"])]
    assert found == [], "\n".join(found)
