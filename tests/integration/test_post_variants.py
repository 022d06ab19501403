"""A post tailored per network: ``variants`` in the API, each target held to its own rules on its own text and
media, and the variant what that target's row carries and its network receives."""

from sqlalchemy import func, select

from models.actions.tables import ScheduledAction
from models.channels.outbox import OutboxEntry
from models.channels.tables import Channel
from models.core.database import db, read_session, write_session
from models.posts.tables import Post
from tests.fakes.mastodon import FakeMastodon
from tests.integration.chat_helpers import LATER, add_channel, upload
from tests.integration.clock_helpers import tick
from tests.media_files import png_bytes


def _add_channel(app, world, name, kind):
    with app.app_context(), write_session() as session:
        from models.core.runtime import runtime

        session.add(Channel(workspace_id=world.workspace_id, name=name, kind=kind, config={},
                            created_at=runtime().now()))


def _new(client, world, **fields):
    body = {"body": "Fresh bread at nine", "targets": ["main"], "local_time": LATER, **fields}
    return client.post("/api/v1/posts", headers=world.auth("marketer"), json=body)


def _posts(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Post))


def test_a_variant_over_one_networks_limit_is_refused_for_that_target_only(client, app, world):
    _add_channel(app, world, "chirps", "x")  # 280, X's weighting
    _add_channel(app, world, "toots", "mastodon")  # 500
    long_one = "Our sourdough, slowly. " * 15  # 345 characters: too long for X, fine for Mastodon
    short_one = "Sourdough at nine."
    everywhere = _new(client, world, body=long_one, targets=["main", "chirps", "toots"])
    assert everywhere.status_code == 422
    error = everywhere.json["error"]
    assert (error["field"], error["channel"], error["rule"]) == ("body", "chirps", "text.x_weighted")

    tailored = _new(client, world, body=long_one, targets=["main", "chirps", "toots"],
                    variants={"chirps": {"body": short_one}})
    assert tailored.status_code == 201, tailored.json
    assert tailored.json["variants"] == {"chirps": {"body": short_one}}

    before = _posts(app)
    refused = _new(client, world, body=short_one, targets=["main", "chirps", "toots"],
                   variants={"chirps": {"body": long_one}, "toots": {"body": long_one}})
    assert refused.status_code == 422
    error = refused.json["error"]
    assert (error["field"], error["channel"], error["rule"], error["code"]) == (
        "variants.chirps.body", "chirps", "text.x_weighted", "too_long")
    assert "chirps" in error["message"]
    assert _posts(app) == before
    # The same text is Mastodon's own: refused on X only.
    fine = _new(client, world, body=short_one, targets=["main", "chirps", "toots"], variants={"toots": {"body": long_one}})
    assert fine.status_code == 201, fine.json

    # An edit is held to the same rules, and a refused one changes nothing.
    post_id = tailored.json["id"]
    edit = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"),
                        json={"variants": {"chirps": {"body": long_one}}})
    assert edit.status_code == 422 and edit.json["error"]["field"] == "variants.chirps.body"
    shown = client.get(f"/api/v1/posts/{post_id}", headers=world.auth()).json
    assert shown["variants"] == {"chirps": {"body": short_one}} and shown["revision"] == 1


BAD_VARIANTS = [
    ("not an object", "variants", "wrong_type"),
    (["chirps"], "variants", "wrong_type"),
    ({"nowhere": {"body": "hello"}}, "variants", "unknown_target"),
    ({"toots": {"body": "hello"}}, "variants", "unknown_target"),  # a channel, but not a target
    ({"main": "hello"}, "variants.main", "wrong_type"),
    ({"main": None}, "variants.main", "wrong_type"),
    ({"main": {}}, "variants.main", "missing"),
    ({"main": {"text": "hello"}}, "variants.main.text", "unknown_field"),
    ({"main": {"body": ""}}, "variants.main.body", "missing"),
    ({"main": {"body": 7}}, "variants.main.body", "wrong_type"),
    ({"main": {"body": None}}, "variants.main.body", "wrong_type"),
    ({"main": {"body": "nul\u0000"}}, "variants", "bad_character"),  # refused by the JSON parser itself
    ({"main": {"media": "12"}}, "variants.main.media", "wrong_type"),
    ({"main": {"media": None}}, "variants.main.media", "wrong_type"),
    ({"main": {"media": [999999]}}, "variants.main.media", "unknown_media"),
    ({"main": {"media": [0]}}, "variants.main.media", "bad_media_id"),
    ({"main": {"media": [True]}}, "variants.main.media", "bad_media_id"),
    ({"main": {"media": ["ftp://x.test/a.png"]}}, "variants.main.media", "bad_media_id"),
    ({"main": {"media": list(range(1, 12))}}, "variants.main.media", "too_many"),
    ({"main": {"body": "x" * 10_001}}, "variants.main.body", "too_long"),
]


def test_bad_variants_are_refused_naming_the_field_and_change_nothing(client, app, world):
    _add_channel(app, world, "toots", "mastodon")
    post_id = _new(client, world).json["id"]
    before = _posts(app)
    for variants, field, code in BAD_VARIANTS:
        answer = _new(client, world, variants=variants)
        assert answer.status_code == 422, (variants, answer.json)
        assert (answer.json["error"]["field"], answer.json["error"]["code"]) == (field, code), variants
        edit = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"), json={"variants": variants})
        assert edit.status_code == 422, (variants, edit.json)
        assert edit.json["error"]["field"] == field, variants
    assert _posts(app) == before
    assert client.get(f"/api/v1/posts/{post_id}", headers=world.auth()).json["revision"] == 1


def _rows(app, post_id):
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(ScheduledAction).where(ScheduledAction.thing_id == f"post:{post_id}")
                                    .order_by(ScheduledAction.id)))


def test_a_variants_text_is_what_the_network_receives_and_an_edited_variant_moves_that_row_only(
        app, client, world, clock, httpserver):
    fake = FakeMastodon(httpserver)
    add_channel(app, "mastodon", fake.url, fake.token, {"visibility": "public", "rate": "none"}, name="toots")
    photo = upload(client, world, png_bytes(size=(40, 30)))
    created = _new(client, world, body="Fresh bread at nine, all of it", media=[photo], targets=["main", "toots"],
                   variants={"toots": {"body": "Bread at nine #sourdough", "media": []}})
    assert created.status_code == 201, created.json
    post_id = created.json["id"]
    approved = client.post(f"/api/v1/posts/{post_id}/approve", headers=world.auth("marketer"))
    assert approved.status_code == 200, approved.json
    payloads = {row.target_key: row.payload for row in _rows(app, post_id)}
    assert payloads == {"main": {"post_id": post_id, "body": "Fresh bread at nine, all of it", "media": [photo]},
                        "toots": {"post_id": post_id, "body": "Bread at nine #sourdough", "media": []}}

    # Editing the variant re-mints the Mastodon row (cancel + insert with lineage); the main row stays.
    first = {row.target_key: row.id for row in _rows(app, post_id)}
    edited = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"),
                          json={"variants": {"toots": {"body": "Warm bread at nine #sourdough"}}})
    assert edited.status_code == 200, edited.json
    rows = _rows(app, post_id)
    by_id = {row.id: row for row in rows}
    assert by_id[first["toots"]].status == "cancelled" and by_id[first["toots"]].cancel_kind == "rescheduled"
    assert by_id[first["main"]].status == "queued"
    [replacement] = [row for row in rows if row.id not in first.values()]
    assert replacement.rescheduled_from_id == first["toots"] and replacement.target_key == "toots"
    # A variant with a body only keeps the main media.
    assert replacement.payload == {"post_id": post_id, "body": "Warm bread at nine #sourdough", "media": [photo]}

    clock.advance(hours=2)
    tick(app)
    [status] = fake.requests_to("/api/v1/statuses")
    assert status.form["status"] == "Warm bread at nine #sourdough"
    assert len(fake.requests_to("/api/v2/media")) == 1
    with app.app_context(), read_session() as session:
        [entry] = session.scalars(select(OutboxEntry))
        assert entry.body["payload"]["body"] == "Fresh bread at nine, all of it"
    shown = client.get(f"/api/v1/posts/{post_id}", headers=world.auth()).json
    assert {t["channel"]: t["status"] for t in shown["targets"]} == {"main": "published", "toots": "published"}


def test_a_removed_target_takes_its_variant_with_it_and_a_variants_media_cannot_be_deleted(client, app, world):
    _add_channel(app, world, "toots", "mastodon")
    photo = upload(client, world, png_bytes(size=(40, 30)))
    post_id = _new(client, world, targets=["main", "toots"],
                   variants={"toots": {"media": [photo]}, "main": {"body": "Just text here"}}).json["id"]
    refused = client.delete(f"/api/v1/media/{photo}", headers=world.auth("marketer"))
    assert refused.status_code == 409 and f"post {post_id}" in refused.json["error"]["message"]
    edit = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"), json={"targets": ["main"]})
    assert edit.status_code == 200, edit.json
    assert edit.json["variants"] == {"main": {"body": "Just text here"}}
    assert client.delete(f"/api/v1/media/{photo}", headers=world.auth("marketer")).status_code in (200, 204)
    cleared = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"), json={"variants": None})
    assert cleared.status_code == 200 and cleared.json["variants"] == {}


def test_post_now_sends_each_target_its_own_variant(client, app, world):
    _add_channel(app, world, "toots", "mastodon")
    post_id = _new(client, world, targets=["main", "toots"], variants={"toots": {"body": "Now, on Mastodon"}}).json["id"]
    assert client.post(f"/api/v1/posts/{post_id}/approve", headers=world.auth("marketer")).status_code == 200
    sent = client.post(f"/api/v1/posts/{post_id}/post-now", headers=world.auth("marketer"))
    assert sent.status_code == 200, sent.json
    now_rows = {row.target_key: row.payload["body"] for row in _rows(app, post_id) if row.origin == "person"}
    assert now_rows == {"main": "Fresh bread at nine", "toots": "Now, on Mastodon"}


def test_approving_checks_each_targets_own_text_against_the_channels_limit_as_it_is_now(client, app, world):
    _add_channel(app, world, "toots", "mastodon")
    post_id = _new(client, world, targets=["main", "toots"], body="x" * 600,
                   variants={"toots": {"body": "y" * 400}}).json["id"]
    with app.app_context(), write_session() as session:
        toots = session.scalar(select(Channel).where(Channel.name == "toots"))
        toots.config = {"max_length": 300}  # lowered since the save
    refused = client.post(f"/api/v1/posts/{post_id}/approve", headers=world.auth("marketer"))
    assert refused.status_code == 422
    assert (refused.json["error"]["field"], refused.json["error"]["channel"]) == ("variants.toots.body", "toots")
    assert _rows(app, post_id) == []
