"""A channel's limits, counted in the database: rows without room are held (queued, not an attempt, not
lateness), a Retry-After pauses the whole channel, and the queue page says so."""

from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import select, update
from werkzeug import Response

from models.actions.tables import ActionHold
from models.channels.tables import Channel, ChannelThrottle
from models.clock.dispatch import DispatchContext, dispatch_actions
from models.clock.pacing import RATE_GUARD
from models.core.database import read_session, write_session
from tests.integration.clock_helpers import add_actions, events, make_channel, row, rows, tick
from models.core.runtime import runtime


class Waits:
    """The lanes' sleep, recorded instead of slept: the frozen clock stands still as if every lane
    of a busy pool asked for its slot at the same instant."""

    def __init__(self, clock):
        self.clock, self.seconds = clock, []

    def __call__(self, seconds: float):
        self.seconds.append(round(seconds, 3))


def dispatch(app, ids, clock):
    waits = Waits(clock)
    with app.app_context():
        results = dispatch_actions(ids, replace(DispatchContext.of(runtime()), sleep=waits))
    return [r.label for r in results], waits.seconds


def hook_channel(app, httpserver, **settings) -> int:
    return make_channel(app, "webhook", {"url": httpserver.url_for("/hook"), **settings})


def test_rows_past_their_channels_rate_are_held_queued_in_order_and_not_counted_as_attempts(app, clock, httpserver):
    httpserver.expect_request("/hook").respond_with_json({"id": "ok"})
    workspace_id = hook_channel(app, httpserver, rate="1/s")
    ids = add_actions(app, workspace_id, 5)
    start = clock.now()
    labels, waits = dispatch(app, ids, clock)
    # The first goes now, the second waits a second for its slot, the rest queue in line.
    assert labels == ["published", "published", "held:rate", "held:rate", "held:rate"]
    assert waits == [pytest.approx((timedelta(seconds=1) + RATE_GUARD).total_seconds())]
    assert len(httpserver.log) == 2
    after = rows(app, ids)
    assert [after[i].status for i in ids[2:]] == ["queued"] * 3
    assert [after[i].attempt_count for i in ids[2:]] == [0, 0, 0]
    due = [after[i].next_attempt_at for i in ids[2:]]
    assert due == sorted(due) and len(set(due)) == 3 and due[0] >= start + 2 * (timedelta(seconds=1) + RATE_GUARD)
    assert [(e.from_status, e.to_status) for e in events(app, ids[2])] == [(None, "queued"), ("queued", "queued")]
    assert "limited to 1/s" in events(app, ids[2])[-1].reason and "not an attempt" in events(app, ids[2])[-1].reason
    # Each held row goes when its turn comes, and takes its slot although others wait behind it.
    for action_id, at in zip(ids[2:], due):
        clock.set(at)
        assert dispatch(app, [action_id], clock)[0] == ["published"]
    assert len(httpserver.log) == 5
    assert [row(app, i).attempt_count for i in ids] == [1] * 5
    tick(app)  # the holds of rows that went out are cleared by the next tick
    with app.app_context(), read_session() as session:
        assert session.scalars(select(ActionHold)).all() == []


def test_a_row_not_in_line_joins_the_end_of_its_channels_line(app, clock, httpserver):
    httpserver.expect_request("/hook").respond_with_json({"id": "ok"})
    workspace_id = hook_channel(app, httpserver, rate="1/s")
    first = add_actions(app, workspace_id, 4)
    dispatch(app, first, clock)
    clock.advance(seconds=1)
    (late_comer,) = add_actions(app, workspace_id, 1, thing_prefix="late")
    assert dispatch(app, [late_comer], clock)[0] == ["held:rate"]
    assert row(app, late_comer).next_attempt_at > max(row(app, i).next_attempt_at for i in first[2:])


def test_a_full_concurrency_cap_holds_a_row_for_a_second_counted_across_every_consumer(app, clock, httpserver):
    from models.actions import lifecycle
    from models.core.moves import Actor

    httpserver.expect_request("/hook").respond_with_json({"id": "ok"})
    workspace_id = hook_channel(app, httpserver, concurrency=1)
    in_flight, waiting = add_actions(app, workspace_id, 2)
    with app.app_context(), write_session() as session:  # another consumer is sending the first one
        assert lifecycle.claim(session, in_flight, now=clock.now(), actor=Actor.job("elsewhere")).ok
    assert dispatch(app, [waiting], clock)[0] == ["held:concurrency"]
    assert row(app, waiting).next_attempt_at == clock.now() + timedelta(seconds=1)
    assert "held: channel main already has 1 send(s) in flight, its limit" in events(app, waiting)[-1].reason
    assert len(httpserver.log) == 0
    # Only the channel's own rows in flight count: not another channel's, nor its rows still queued.
    make_channel(app, "webhook", {"url": httpserver.url_for("/hook"), "concurrency": 1}, name="second")
    first, behind = add_actions(app, workspace_id, 2, channel="second", thing_prefix="second")
    assert dispatch(app, [first], clock)[0] == ["published"]
    assert row(app, behind).status == "queued" and len(httpserver.log) == 1


def test_a_retry_after_pauses_the_channel_for_every_row_not_only_the_one_that_got_it(app, clock, httpserver):
    answers = iter([Response("slow down", status=429, headers={"Retry-After": "120"})])

    def answer(request):
        return next(answers, None) or Response('{"id": "ok"}', status=200, content_type="application/json")

    httpserver.expect_request("/hook").respond_with_handler(answer)
    workspace_id = hook_channel(app, httpserver)  # no limit of its own
    ids = add_actions(app, workspace_id, 3)
    start = clock.now()
    labels, _ = dispatch(app, ids, clock)
    assert labels == ["reverted:retry_later", "held:paused", "held:paused"]
    assert len(httpserver.log) == 1
    after = rows(app, ids)
    assert after[ids[0]].attempt_count == 1 and after[ids[0]].next_attempt_at == start + timedelta(seconds=120)
    assert [after[i].attempt_count for i in ids[1:]] == [0, 0]
    assert {after[i].next_attempt_at for i in ids[1:]} == {start + timedelta(seconds=120)}
    with app.app_context(), read_session() as session:
        throttle = session.get(ChannelThrottle, after[ids[0]].channel_id)
        assert throttle.paused_until == start + timedelta(seconds=120)
        reason = f"the webhook endpoint answered 429, try later: slow down (action {ids[0]})"
        assert throttle.pause_reason == reason
    assert events(app, ids[1])[-1].reason == f"paused until 12:02:00Z by its provider ({reason}); not an attempt"
    clock.advance(seconds=119)
    assert tick(app)["due"] == 0
    clock.advance(seconds=1)
    assert tick(app)["outcomes"] == {"published": 3}
    assert len(httpserver.log) == 4


@pytest.mark.parametrize("minutes_after_the_hold, becomes", [(9, "published"), (11, "failed")])
def test_a_held_row_is_never_missed_for_the_wait_its_channel_caused_but_lateness_before_and_after_counts(
        app, clock, httpserver, minutes_after_the_hold, becomes):
    """An SMS may be 1 h late. Held when 50 min late, its 10 min wait for the channel does not count:
    9 min after the hold ends it is 59 min late and goes; 11 min after, 61 min, and it is missed."""
    httpserver.expect_request("/hook").respond_with_json({"id": "ok"})
    workspace_id = hook_channel(app, httpserver, rate="1/min")
    (first,) = add_actions(app, workspace_id, 1, thing_prefix="first")
    assert dispatch(app, [first], clock)[0] == ["published"]  # takes the slot; the next is a minute away
    clock.advance(minutes=9)
    for _ in range(9):  # nine more rows take the slots of the coming nine minutes
        (busy,) = add_actions(app, workspace_id, 1, thing_prefix=f"busy{_}")
        dispatch(app, [busy], clock)
    (sms,) = add_actions(app, workspace_id, 1, action_type="send_sms", due_in=-timedelta(minutes=50),
                         thing_prefix="sms")
    held_at = clock.now()
    assert dispatch(app, [sms], clock)[0] == ["held:rate"]
    held = row(app, sms)
    assert held.attempt_count == 0 and held.next_attempt_at > held_at + timedelta(minutes=9)
    with app.app_context(), read_session() as session:
        hold = session.get(ActionHold, sms)
    assert hold.held_until - hold.late_from == timedelta(minutes=50)
    clock.set(held.next_attempt_at + timedelta(minutes=minutes_after_the_hold))
    summary = tick(app)
    after = row(app, sms)
    assert after.status == ("published" if becomes == "published" else "failed")
    if becomes == "failed":
        assert after.failure_code == "missed_window" and summary["missed"] == 1
        assert "not counting the time its channel held it back" in after.last_error
        assert after.attempt_count == 0


def test_a_channels_limits_are_refused_when_garbled_and_default_by_kind():
    from models.channels.limits import limits_for, validate_limits
    from models.core.errors import InvalidInput

    assert str(limits_for("twilio", {}).rate) == "1/s"
    assert str(limits_for("mastodon", {}).rate) == "60/min"
    assert limits_for("twilio", {"rate": "none"}).rate is None
    assert limits_for("webhook", {}).limited is False
    assert limits_for("webhook", {"rate": "600/min", "concurrency": 4}).describe() == "600/min, 4 at once"
    for bad in ({"rate": "fast"}, {"rate": "0/s"}, {"rate": "20/hour"}, {"concurrency": 0}, {"concurrency": "many"}):
        with pytest.raises(InvalidInput) as refused:
            validate_limits("webhook", bad)
        assert refused.value.field == "settings"
    with pytest.raises(InvalidInput, match="log channel"):
        validate_limits("log", {"rate": "1/s"})


def test_a_chunk_sends_a_capped_channels_rows_in_as_many_lanes_as_its_cap_so_it_never_holds_its_own():
    from types import SimpleNamespace

    from models.clock.dispatch import _Looked, lanes_of

    capped = SimpleNamespace(id=1, kind="webhook", config={"url": "https://x.test", "concurrency": 2})
    free = SimpleNamespace(id=2, kind="webhook", config={"url": "https://y.test"})
    mail = SimpleNamespace(id=3, kind="smtp", config={"host": "mx.test"})
    rows = [_Looked(SimpleNamespace(id=n), channel, None)
            for n, channel in enumerate([capped, free, capped, mail, capped, free, mail])]
    assert [[looked.row.id for looked in lane] for lane in lanes_of(rows)] == [[0, 4], [1], [2], [3, 6], [5]]
    # A chunk of 25 messages for one SMTP channel: two connections, the messages dealt out in turn.
    many = [_Looked(SimpleNamespace(id=n), mail, None) for n in range(25)]
    assert [len(lane) for lane in lanes_of(many)] == [13, 12]


def test_a_send_whose_claim_overran_its_slot_takes_the_channels_next_slot_instead_of_bunching(app, clock):
    from models.channels.limits import limits_for
    from models.channels.tables import Channel
    from models.clock.dispatch import _wait_for_slot
    from models.clock.pacing import LATE_START, admit, spacing

    workspace_id = make_channel(app, "webhook", {"url": "https://hook.test", "rate": "20/s"})
    with app.app_context():
        context = DispatchContext.of(runtime())
        with read_session() as session:
            channel = session.scalar(select(Channel).where(Channel.workspace_id == workspace_id))
        limits = limits_for(channel.kind, channel.config)
        step = spacing(limits.rate)
        with write_session() as session:
            first = admit(session, channel, limits, clock, in_line=False).slot
            second = admit(session, channel, limits, clock, in_line=False).slot
        assert second - first == step
        waits = Waits(clock)
        # The first row's commit took a little less than the late allowance: it keeps its slot.
        clock.advance(seconds=(LATE_START - timedelta(milliseconds=5)).total_seconds())
        _wait_for_slot(first, channel, limits, replace(context, sleep=waits))
        assert waits.seconds == []
        # The first row's commit overran its slot: sending now would land next to the second
        # row's send, so it goes one step after the second instead.
        clock.advance(seconds=0.01)
        _wait_for_slot(first, channel, limits, replace(context, sleep=waits))
        late_by = LATE_START + timedelta(milliseconds=5)
        assert waits.seconds == [pytest.approx((second + step - first - late_by).total_seconds(), abs=0.002)]
        with read_session() as session:
            assert session.get(ChannelThrottle, channel.id).next_slot_at == second + 2 * step


def test_the_queue_pages_throttled_channels_are_this_workspaces_paused_or_holding_ones_with_their_figures(
        app, clock, httpserver):
    from models.clock.pacing import ThrottledChannel, pause, throttled_channels

    httpserver.expect_request("/hook").respond_with_json({"id": "ok"})
    workspace_id = make_channel(app, "webhook", {"url": httpserver.url_for("/hook"), "rate": "1/s"}, name="paced")
    make_channel(app, "webhook", {"url": "https://hook.test"}, name="paused")
    make_channel(app, "webhook", {"url": "https://hook.test"}, name="quiet")
    make_channel(app, "webhook", {"url": "https://hook.test"}, name="was-paused")
    other = make_channel(app, "webhook", {"url": "https://hook.test"}, name="elsewhere", workspace="Other")
    start = clock.now()
    *sent, held_first, held_last = add_actions(app, workspace_id, 4, channel="paced", due_in=-timedelta(minutes=2))
    held = [held_first, held_last]
    labels, _ = dispatch(app, [*sent, *held], clock)
    assert labels == ["published", "published", "held:rate", "held:rate"]  # the second waited for its slot
    with app.app_context(), write_session() as session:
        ids = {c.name: c.id for c in session.scalars(select(Channel))}
        pause(session, ids["paused"], until=start + timedelta(hours=2, minutes=5), reason="429 slow down", now=start)
        pause(session, ids["was-paused"], until=start - timedelta(seconds=1), reason="long ago", now=start)
        pause(session, ids["elsewhere"], until=start + timedelta(hours=1), reason="not ours", now=start)
    with app.app_context(), read_session() as session:
        shown = throttled_channels(session, workspace_id, clock.now())
        assert throttled_channels(session, other, clock.now())[0].name == "elsewhere"
    paced, paused = shown
    assert [c.name for c in shown] == ["paced", "paused"]
    assert (paced.limits, paced.held, paced.paused_until, paced.pause_reason) == ("1/s", 2, None, None)
    assert paced.oldest_due == start - timedelta(minutes=2)
    assert paced.clear_at == row(app, held_last).next_attempt_at > row(app, held_first).next_attempt_at
    assert (paused.held, paused.paused_until, paused.pause_reason) == (0, start + timedelta(hours=2, minutes=5),
                                                                      "429 slow down")
    assert paused.behind(clock.now()) is None and paused.behind_words(clock.now()) == "0m00s"
    # How far behind a channel is, in words: minutes and seconds under an hour, hours and minutes above.
    waiting = ThrottledChannel(1, "x", "1/s", None, None, 3, clear_at=start + timedelta(minutes=3, seconds=7),
                               oldest_due=start)
    assert waiting.behind(start) == timedelta(minutes=3, seconds=7) and waiting.behind_words(start) == "3m07s"
    assert waiting.behind(start + timedelta(minutes=5)) == timedelta(0)
    assert replace(waiting, clear_at=start + timedelta(hours=2, minutes=4, seconds=59)).behind_words(start) == "2h04m"
    assert replace(waiting, clear_at=start + timedelta(hours=1)).behind_words(start) == "1h00m"
    assert replace(waiting, clear_at=start + timedelta(seconds=3599)).behind_words(start) == "59m59s"


def test_a_pause_keeps_the_longest_until_and_300_characters_of_its_reason_and_a_late_rows_fresh_slot_waits_for_it(
        app, clock):
    from models.channels.limits import limits_for
    from models.clock.pacing import _paused, pause, retake, spacing

    workspace_id = make_channel(app, "webhook", {"url": "https://hook.test", "rate": "2/s"})
    start = clock.now()
    with app.app_context():
        with read_session() as session:
            channel = session.scalar(select(Channel).where(Channel.workspace_id == workspace_id))
        limits = limits_for(channel.kind, channel.config)
        with write_session() as session:
            # A fresh slot is never before now, whatever the channel's row says.
            assert retake(session, channel.id, limits, clock) == start
            session.execute(update(ChannelThrottle).where(ChannelThrottle.channel_id == channel.id)
                            .values(next_slot_at=start - timedelta(seconds=5),
                                    paused_until=start - timedelta(seconds=9)))
            assert retake(session, channel.id, limits, clock) == start
            pause(session, channel.id, until=start + timedelta(seconds=30), reason="x" * 400, now=start)
            pause(session, channel.id, until=start + timedelta(seconds=10), reason="shorter", now=start)
            # A late row's fresh slot waits for the pause, though the channel's next slot comes sooner.
            assert retake(session, channel.id, limits, clock) == start + timedelta(seconds=30)
            throttle = session.get(ChannelThrottle, channel.id)
            assert throttle.next_slot_at == start + timedelta(seconds=30) + spacing(limits.rate)
            assert throttle.paused_until == start + timedelta(seconds=30) and throttle.pause_reason == "x" * 300
            throttle.pause_reason = None
            assert _paused(throttle, start + timedelta(seconds=30)) == "paused until 12:00:30Z by its provider"
