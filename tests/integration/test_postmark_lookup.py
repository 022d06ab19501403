"""Postmark's unknown outcomes, looked up rather than guessed: the action id rides in each message's metadata, and a
send whose answer was lost is found in Postmark's outbound search, or failed for a person once the search had time."""

import pytest

from tests.fakes.postmark import PostmarkFake
from tests.integration.clock_helpers import add_actions, events, make_channel, row, tick

PAYLOAD = {"body": "Fresh bread at nine", "subject": "Bread", "to": "a@example.com"}


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 0.5, "task_timeout": 1, "recovery_timeout": 60,
                                     "backoff_base": 30, "backoff_cap": 600}
    app_config["TICKWORK_POSTMARK_SETTLE_MINUTES"] = 5
    return app_config


@pytest.fixture
def postmark(httpserver):
    return PostmarkFake(httpserver)


def one_row(app, postmark) -> int:
    workspace_id = make_channel(app, "postmark", {"url": postmark.url, "from": "shop@example.com"}, postmark.token)
    return add_actions(app, workspace_id, 1, payload=PAYLOAD)[0]


def test_a_lost_answer_found_in_the_outbound_search_publishes_with_its_message_id(app, postmark):
    action_id = one_row(app, postmark)
    postmark.lose_next_answer(502)
    tick(app)
    after = row(app, action_id)
    ((message_id, message),) = postmark.sent
    assert message["Metadata"] == {"tickwork_action": str(action_id)}
    assert after.status == "published" and after.provider_id == message_id
    ((args, headers),) = postmark.searches
    assert args == {"count": "1", "offset": "0", "metadata_tickwork_action": str(action_id)}
    assert headers["X-Postmark-Server-Token"] == postmark.token
    assert any("Postmark has the message" in (event.reason or "") for event in events(app, action_id))


def test_not_found_before_the_settle_delay_is_asked_again_on_a_later_pass(app, postmark, clock):
    action_id = one_row(app, postmark)
    postmark.lagging = True
    postmark.lose_next_answer(504)
    tick(app)
    assert row(app, action_id).status == "submitted"
    clock.advance(minutes=2)  # past the recovery timeout, not the settle delay: left for a later pass
    summary = tick(app)
    assert row(app, action_id).status == "submitted" and summary["recovered"] == 0
    postmark.lagging = False
    clock.advance(minutes=1)
    tick(app)
    after = row(app, action_id)
    assert after.status == "published" and after.provider_id == postmark.sent[0][0]
    assert len(postmark.sent) == 1 and len(postmark.searches) == 3


def test_not_found_after_the_settle_delay_fails_for_a_person_and_is_never_sent_again(app, postmark, clock):
    action_id = one_row(app, postmark)
    postmark.lagging = True
    postmark.lose_next_answer(502)
    tick(app)
    clock.advance(minutes=6)
    summary = tick(app)
    after = row(app, action_id)
    assert summary["recovered"] == 1
    assert after.status == "failed" and after.failure_code == "outcome_unknown"
    assert after.last_error.startswith("outcome unknown") and "Postmark was asked" in after.last_error
    clock.advance(minutes=10)
    tick(app)
    assert len(postmark.sent) == 1 and row(app, action_id).status == "failed"


def test_a_worker_lost_mid_send_is_looked_up_before_it_is_failed(app, postmark, clock):
    from sqlalchemy import update

    from models.actions.tables import ScheduledAction
    from models.core.database import write_session

    action_id = one_row(app, postmark)
    postmark.sent.append(("pm-from-the-dead", {"To": "a@example.com", "Subject": "Bread",
                                               "Metadata": {"tickwork_action": str(action_id)}}))
    with app.app_context(), write_session() as session:
        session.execute(update(ScheduledAction).where(ScheduledAction.id == action_id).values(
            status="submitted", claim_token="dead", submitted_at=clock.now(), attempt_count=1))
    clock.advance(minutes=2)
    summary = tick(app)
    assert summary["recovered"] == 1
    after = row(app, action_id)
    assert after.status == "published" and after.provider_id == "pm-from-the-dead"
