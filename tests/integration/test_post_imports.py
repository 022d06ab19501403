"""Scheduling posts from a CSV file through ``POST /api/v1/posts.csv``: the dry run line for line, the
commit making exactly the posts it promised (drafts or approved), and every refusal changing nothing.

T0 is 2026-06-01 12:00 UTC, 08:00 in the world's zone (America/New_York).
"""

import io

import pytest
from sqlalchemy import func, select

from models.actions.tables import ScheduledAction
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.imports.tables import CsvImport
from models.posts.tables import Post
from tests.integration.test_openapi import documented
from tests.media_files import png_bytes

LONG = "x" * 600  # more than a Mastodon channel takes (500)
HEADER = "body,targets,date,time,media\n"
LINES = [
    # line 2 onwards, and each line's fate
    ('Fresh bread at nine,main,2026-06-10,09:00,1', "schedule"),
    ("Night owl,main,2026-11-01,01:30,", "schedule"),
    ("Spring forward,main,2027-03-14,02:30,", "schedule"),
    ("Bad date,main,2026-13-40,09:00,", "bad_time"),
    ("Bad time,main,2026-06-10,25:00,", "bad_time"),
    ("Too late,main,2026-05-01,09:00,", "in_the_past"),
    ("Nowhere,nowhere,2026-06-10,09:00,", "unknown_channel"),
    (f"{LONG},main|toots,2026-06-10,09:00,", "too_long"),
    ('Fresh bread at nine,main,2026-06-10,09:00,1', "duplicate_line"),
    (",main,2026-06-10,09:00,", "invalid_value"),
    ("Two targets,main|toots,2026-06-11,10:00,", "schedule"),
    ("Bad link,main,2026-06-11,10:00,ftp://example.com/x", "invalid_value"),
    ("A link to fetch,main,2026-06-11,10:00,https://example.com/x.jpg", "invalid_value"),
    ("Not in the library,main,2026-06-11,10:00,999", "invalid_value"),
    ("one,two,three,four,five,six", "malformed"),
]
FILE = (HEADER + "\n".join(line for line, _ in LINES) + "\n").encode()


@pytest.fixture(autouse=True)
def photo(client, world):
    """Media item 1, which the file's first line names."""
    answer = client.post("/api/v1/media", headers=world.auth("marketer"), content_type="multipart/form-data",
                         data={"file": (io.BytesIO(png_bytes()), "bread.png")})
    assert answer.status_code == 201 and answer.json["id"] == 1, answer.json
    return answer.json


def _add_channel(app, world, name, kind="log"):
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name=name, kind=kind, config={},
                            created_at=runtime().now()))


def _count(app, model, *where) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(model).where(*where))


def _upload(client, world, data: bytes, query: str = "?dry_run=1", role: str = "marketer"):
    return client.post(f"/api/v1/posts.csv{query}", data=data, headers={**world.auth(role),
                                                                       "Content-Type": "text/csv"})


def test_the_dry_run_reports_each_lines_fate_and_writes_no_post(app, client, world):
    _add_channel(app, world, "toots", kind="mastodon")
    answer = _upload(client, world, FILE)
    assert answer.status_code == 200, answer.json
    report = answer.json
    assert [(line["line"], line["fate"]) for line in report["lines"]] == [
        (number, fate) for number, (_, fate) in enumerate(LINES, start=2)]
    messages = {line["line"]: line["message"] for line in report["lines"]}
    assert messages[2] == "at Wed 10 Jun 2026, 09:00 EDT"
    assert "happens twice" in messages[3] and "01:30 EDT, was used" in messages[3]
    assert "does not exist" in messages[4] and "moved to 03:30 EDT" in messages[4]
    assert "is in the past" in messages[7]
    assert "'nowhere'" in messages[8]
    assert "toots (mastodon) refuses the body" in messages[9] and "at most 500" in messages[9]
    assert messages[10] == "line 2 has the same body, targets and time"
    assert report["accepted"] == 4 and report["counts"]["schedule"] == 4
    assert _count(app, Post) == 0 and _count(app, ScheduledAction) == 0


def test_the_commit_makes_exactly_the_promised_posts_approved_and_only_once(app, client, world):
    _add_channel(app, world, "toots", kind="mastodon")
    report = _upload(client, world, FILE).json
    committed = client.post(f"/api/v1/posts/imports/{report['import_id']}/commit", headers=world.auth("marketer"),
                            json={"status": "approved"})
    assert committed.status_code == 200, committed.json
    assert committed.json["created"] == 4 and committed.json["changed"] == [] and committed.json["queued_rows"] == 5
    posts = client.get("/api/v1/posts", headers=world.auth("marketer")).json["posts"]
    assert [(p["body"], p["local_time"], p["publish_at"], p["status"], [t["channel"] for t in p["targets"]],
             p["media"]) for p in posts] == [
        ("Fresh bread at nine", "2026-06-10T09:00", "2026-06-10T13:00:00Z", "approved", ["main"],
         [1]),
        ("Two targets", "2026-06-11T10:00", "2026-06-11T14:00:00Z", "approved", ["main", "toots"], []),
        ("Night owl", "2026-11-01T01:30", "2026-11-01T05:30:00Z", "approved", ["main"], []),
        ("Spring forward", "2027-03-14T02:30", "2027-03-14T07:30:00Z", "approved", ["main"], []),
    ]
    assert _count(app, ScheduledAction, ScheduledAction.status == "queued") == 5
    again = client.post(f"/api/v1/posts/imports/{report['import_id']}/commit", headers=world.auth("marketer"),
                        json={"status": "approved"})
    assert again.status_code == 200 and again.json["created"] == 4
    assert _count(app, Post) == 4  # a second commit makes nothing more
    # The same file uploaded again: what it scheduled is there already.
    report = _upload(client, world, FILE).json
    fates = {line["line"]: (line["fate"], line["message"]) for line in report["lines"]}
    assert [fates[n][0] for n in (2, 3, 4, 12)] == ["already_scheduled"] * 4 and report["accepted"] == 0
    assert fates[2][1].startswith("post #") and fates[2][1].endswith("has the same body at the same time")


def test_drafts_by_choice_and_lines_whose_fate_changed_since_the_dry_run(app, client, world, clock):
    data = (HEADER + "Soon,main,2026-06-01,08:30,\nLater,main,2026-06-02,09:00,\n").encode()
    report = _upload(client, world, data).json
    assert [line["fate"] for line in report["lines"]] == ["schedule", "schedule"]
    clock.advance(minutes=40)  # 08:40 in New York: the first line's time has passed
    committed = client.post(f"/api/v1/posts/imports/{report['import_id']}/commit", headers=world.auth("marketer"))
    assert committed.status_code == 200
    assert committed.json["created"] == 1 and committed.json["queued_rows"] == 0
    assert committed.json["changed"] == [{"line": 2, "was": "schedule", "now": "in_the_past",
                                          "message": "local_time is in the past; pick a later time, or use Post now"}]
    posts = client.get("/api/v1/posts", headers=world.auth("marketer")).json["posts"]
    assert [(p["body"], p["status"]) for p in posts] == [("Later", "draft")]
    assert _count(app, ScheduledAction) == 0


def test_without_dry_run_the_file_is_committed_at_once(app, client, world):
    data = (HEADER + "Now and here,main,2026-06-03,09:00,\nNope,main,2026-06-03,99:00,\n").encode()
    answer = _upload(client, world, data, query="?status=approved")
    assert answer.status_code == 201, answer.json
    assert [line["fate"] for line in answer.json["lines"]] == ["schedule", "bad_time"]
    assert answer.json["commit"]["created"] == 1 and answer.json["commit"]["queued_rows"] == 1
    assert _count(app, Post, Post.status == "approved") == 1


def test_local_time_column_and_multipart_upload(app, client, world):
    data = "\ufeffBody,Targets,Local_Time\nA column of its own,main,2026-06-04 09:15\n".encode()
    answer = client.post("/api/v1/posts.csv?dry_run=1", headers=world.auth("marketer"),
                         data={"file": (io.BytesIO(data), "posts.csv")},
                         content_type="multipart/form-data")
    assert answer.status_code == 200, answer.json
    assert answer.json["lines"][0]["fate"] == "schedule"
    assert answer.json["lines"][0]["message"] == "at Thu 04 Jun 2026, 09:15 EDT"


def test_refused_files_change_nothing(app, client, world):
    too_many = (HEADER + "".join(f"Post {n},main,2026-06-10,09:00,\n" for n in range(5001))).encode()
    cases = [
        (too_many, "too_many_lines", "more than 5,000 lines"),
        (b"targets,date,time\nmain,2026-06-10,09:00\n", "missing_header", "it lacks body"),
        # Without date and time a line goes into the queue; one of the two alone is no time at all.
        (b"body,targets,date\nHello,main,2026-06-10\n", "missing_header", "date and time together"),
        (b"body,targets,date,time,colour\nHello,main,2026-06-10,09:00,red\n", "bad_header", "'colour'"),
        ("body,targets,date,time\nCaf\u00e9,main,2026-06-10,09:00\n".encode("latin-1"), "not_utf8", "line 2"),
        (b"", "empty", "empty"),
    ]
    for data, code, words in cases:
        answer = _upload(client, world, data)
        assert answer.status_code == 422, (code, answer.json)
        assert answer.json["error"]["code"] == code and words in answer.json["error"]["message"], answer.json
    exactly = (HEADER + "".join(f"Post {n},main,2026-06-10,09:00,\n" for n in range(5000))).encode()
    assert _upload(client, world, exactly).json["accepted"] == 5000
    bad_status = _upload(client, world, exactly[:200].rsplit(b"\n", 1)[0] + b"\n", query="?status=published")
    assert bad_status.status_code == 422 and bad_status.json["error"]["field"] == "status"
    assert _count(app, CsvImport) == 1 and _count(app, Post) == 0


def test_an_import_is_committed_only_in_its_own_workspace_and_while_kept(app, client, world, clock):
    from tests.conftest import make_world

    other = make_world(app, name="Other")
    report = _upload(client, world, (HEADER + "Mine,main,2026-06-10,09:00,\n").encode()).json
    url = f"/api/v1/posts/imports/{report['import_id']}/commit"
    assert client.post(url, headers=other.auth("admin")).status_code == 404
    assert client.post("/api/v1/posts/imports/nonsense/commit", headers=world.auth("admin")).status_code == 404
    refused = client.post(url, headers=world.auth("admin"), json={"status": "sent"})
    assert refused.status_code == 422 and refused.json["error"]["field"] == "status"
    refused = client.post(url, headers=world.auth("admin"), json={"approve": True})
    assert refused.status_code == 422 and refused.json["error"]["code"] == "unknown_field"
    clock.advance(hours=1, minutes=1)
    gone = client.post(url, headers=world.auth("admin"))
    assert gone.status_code == 404 and "run it again" in gone.json["error"]["message"]
    assert _count(app, Post) == 0


def test_the_routes_are_in_the_openapi_document(app):
    assert {("/api/v1/posts.csv", "POST"), ("/api/v1/posts/imports/{import_id}/commit", "POST")} <= documented(app)


def test_a_file_is_read_in_batches_with_duplicates_found_across_them(app, client, world, monkeypatch):
    from models.imports import runs

    monkeypatch.setattr(runs, "CHECK_BATCH", 3)
    monkeypatch.setattr(runs, "APPLY_BATCH", 2)
    lines = [f"Post {n},main,2026-06-10,09:{n:02d}," for n in range(7)] + ["Post 1,main,2026-06-10,09:01,"]
    report = _upload(client, world, (HEADER + "\n".join(lines) + "\n").encode()).json
    assert [line["fate"] for line in report["lines"]] == ["schedule"] * 7 + ["duplicate_line"]
    committed = client.post(f"/api/v1/posts/imports/{report['import_id']}/commit", headers=world.auth("ops"),
                            json={"status": "draft"})
    assert committed.json["created"] == 7 and _count(app, Post) == 7
    assert committed.json["counts"] == {"schedule": 7}


def test_a_commit_whose_process_died_is_finished_by_the_next_one_without_doubling_a_line(app, client, world, clock,
                                                                                        monkeypatch):
    from models.core.moves import Actor
    from models.core.runtime import runtime
    from models.imports import runs
    from models.posts.import_csv import PostImport

    _add_channel(app, world, "toots", kind="mastodon")
    report = _upload(client, world, FILE).json
    monkeypatch.setattr(runs, "APPLY_BATCH", 1)

    class DiesAfterTheFirstBatch(PostImport):
        batches = 0

        def apply(self, *args, **kwargs):
            DiesAfterTheFirstBatch.batches += 1
            if DiesAfterTheFirstBatch.batches == 2:
                raise SystemExit("the web worker was killed")
            return super().apply(*args, **kwargs)

    with app.app_context():
        rt = runtime()
        checker = DiesAfterTheFirstBatch(clock=rt.clock, policy=rt.policy, approve=True)
        try:
            runs.commit(report["import_id"], checker, workspace_id=world.workspace_id, target="workspace",
                        actor=Actor(label="user:marketer", user_id=world.users["marketer"]), clock=rt.clock)
        except SystemExit:
            pass
    assert _count(app, Post) == 1
    url = f"/api/v1/posts/imports/{report['import_id']}/commit"
    busy = client.post(url, headers=world.auth("marketer"), json={"status": "approved"})
    assert busy.status_code == 409 and busy.json["error"]["code"] == "import_committing"
    clock.advance(seconds=(runs.STALE_COMMIT.total_seconds() + 1))
    finished = client.post(url, headers=world.auth("marketer"), json={"status": "approved"})
    assert finished.status_code == 200, finished.json
    assert finished.json["created"] == 4 and finished.json["changed"] == []
    assert _count(app, Post) == 4 and _count(app, ScheduledAction, ScheduledAction.status == "queued") == 5


def test_a_commit_taken_over_between_two_of_its_own_batches_stops_and_the_taker_applies_each_line_once(
        app, client, world, clock, monkeypatch):
    """The commit stalls for STALE_COMMIT after its first batch; another takes it over and finishes it. The first
    commit's next batch finds its heartbeat no longer its own and stops (409) instead of going on beside the taker."""
    from sqlalchemy import event
    from sqlalchemy.orm import Session

    from models.core.errors import Conflict
    from models.core.moves import Actor
    from models.core.runtime import runtime
    from models.imports import runs
    from models.posts.import_csv import PostImport

    _add_channel(app, world, "toots", kind="mastodon")
    report = _upload(client, world, FILE).json
    monkeypatch.setattr(runs, "APPLY_BATCH", 1)
    actor = Actor(label="user:marketer", user_id=world.users["marketer"])
    stalled, taken = [], []

    class StallsAfterItsFirstBatch(PostImport):
        def apply(self, *args, **kwargs):
            fates = super().apply(*args, **kwargs)
            stalled.append(True)
            return fates

    def take_over(_session):
        """Once the first batch has committed, before the next begins: still for STALE_COMMIT, then taken over."""
        if stalled and not taken:
            taken.append(True)
            clock.advance(seconds=runs.STALE_COMMIT.total_seconds() + 1)
            rt = runtime()
            taken.append(runs.commit(report["import_id"], PostImport(clock=rt.clock, policy=rt.policy, approve=True),
                                     workspace_id=world.workspace_id, target="workspace", actor=actor, clock=rt.clock))

    event.listen(Session, "after_commit", take_over)
    try:
        with app.app_context():
            rt = runtime()
            with pytest.raises(Conflict) as stopped:
                runs.commit(report["import_id"], StallsAfterItsFirstBatch(clock=rt.clock, policy=rt.policy, approve=True),
                            workspace_id=world.workspace_id, target="workspace", actor=actor, clock=rt.clock)
    finally:
        event.remove(Session, "after_commit", take_over)
    assert stopped.value.code == "import_committing" and len(stalled) == 1
    assert taken[1].changed == []
    assert _count(app, Post) == 4 and _count(app, ScheduledAction, ScheduledAction.status == "queued") == 5


def test_committing_one_import_leaves_another_staged_at_the_same_instant_as_it_was(app, client, world):
    """Two dry runs staged at the same instant: each of the commit's statements names its own import, so the other
    keeps its status, its counts and its lines, and commits afterwards just as its dry run promised."""
    first = _upload(client, world, (HEADER + "One,main,2026-06-10,09:00,\nTwo,main,2026-06-10,10:00,\n").encode()).json
    second = _upload(client, world, (HEADER + "Three,main,2026-06-11,09:00,\n").encode()).json
    assert client.post(f"/api/v1/posts/imports/{first['import_id']}/commit", headers=world.auth("ops"),
                       json={"status": "approved"}).json["created"] == 2
    with app.app_context(), read_session() as session:
        imports = {row.id: (row.status, row.accepted_count) for row in session.scalars(select(CsvImport))}
    assert imports == {first["import_id"]: ("committed", 2), second["import_id"]: ("staged", 1)}
    committed = client.post(f"/api/v1/posts/imports/{second['import_id']}/commit", headers=world.auth("ops"),
                            json={"status": "approved"})
    assert committed.status_code == 200 and committed.json["created"] == 1, committed.json
    assert _count(app, Post) == 3


def test_while_review_is_required_an_import_makes_no_approved_post(app, client, world):
    assert client.patch("/api/v1/workspace", headers=world.auth("admin"), json={"review": "required"}).status_code == 200
    data = (HEADER + "Reviewed first,main,2026-06-03,09:00,\n").encode()
    answer = _upload(client, world, data, query="?status=approved")
    assert answer.status_code == 201, answer.json
    assert answer.json["commit"]["created"] == 0, answer.json
    assert _count(app, Post) == 0
    drafts = _upload(client, world, data, query="?status=draft")
    assert drafts.json["commit"]["created"] == 1 and _count(app, Post, Post.status == "draft") == 1
