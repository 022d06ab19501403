"""The pages that refresh themselves carry their poller and its mark; destructive buttons carry their question."""

from tests.web.conftest import claim_and, make_action


def test_the_queue_failures_and_health_poll_while_open_and_the_actions_list_does_not(app, world, browser_for):
    failed = make_action(app, world, minutes=-5, target="poll@example.test")
    claim_and(app, failed, "failed")
    admin = browser_for("admin")
    for url in ("/queue", "/failures", "/health"):
        page = admin.get(url).get_data(as_text=True)
        assert "data-refresh" in page and "data-updated-at" in page and "every 15s" in page, url
        # What a refresh brings back carries its own mark ("updated just now" again).
        assert "data-updated-at" in admin.get(url, htmx=True).get_data(as_text=True), url
    assert "data-refresh" not in admin.get("/actions").get_data(as_text=True)
    filtered = admin.get("/failures?q=poll", htmx=True).get_data(as_text=True)
    assert 'hx-get="/failures?q=poll"' in filtered  # a refresh keeps the filters it was opened with


def test_cancel_and_retry_ask_before_they_act(app, world, browser_for):
    queued = make_action(app, world, minutes=30, target="ask@example.test")
    failed = make_action(app, world, minutes=-5, target="ask-failed@example.test")
    claim_and(app, failed, "failed")
    admin = browser_for("admin")
    queue = admin.get("/queue?q=ask").get_data(as_text=True)
    assert f'hx-confirm="Cancel #{queued}, send_email to ask@example.test for good?"' in queue
    failures = admin.get("/failures?q=ask").get_data(as_text=True)
    assert f'hx-confirm="Retry #{failed}, send_email to ask-failed@example.test now?' in failures


def test_removing_an_enrollment_and_deleting_a_work_ask_before_they_act(app, world, browser_for):
    from tests.integration.drip_helpers import campaign, contacts, enroll, enrollments
    from tests.integration.works_helpers import create_work

    campaign_id = campaign(app, world.workspace_id, name="Asks first")
    [person] = contacts(app, world.workspace_id, 1, prefix="asked")
    enroll(app, world.workspace_id, campaign_id, [person])
    [enrollment] = enrollments(app, campaign_id)
    ops = browser_for("ops")
    page = ops.get(f"/enrollments/{enrollment.id}").get_data(as_text=True)
    assert 'data-confirm="Remove this contact from the campaign? It receives none of its later steps."' in page
    work = create_work(app.test_client(), world, name="Asks too")
    assert 'data-confirm="Delete work Asks too?' in ops.get(f"/works/{work}").get_data(as_text=True)
