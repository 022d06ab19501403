"""The ``linkedin`` provider against a loopback LinkedIn REST API (tests/fakes/linkedin.py), through the real
dispatch: the documented headers, images registered and PUT before the post, one image as ``media`` and several as
``multiImage`` with their alt text, the post's URN from ``x-restli-id``, commentary escaped as Little Text Format,
and every documented answer mapped to its outcome."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from models.channels.providers import SendContext, SendOutcome, linkedin
from models.channels.providers.base import Delivery, MediaFile
from models.channels.providers.http import http_client
from tests.conftest import T0
from tests.fakes.linkedin import LinkedInFake
from tests.integration.clock_helpers import add_actions, channel_needs_reconnecting, make_channel, row, tick
from tests.media_files import multipart, png_bytes

TOKEN = "li-member-token"
AUTHOR = "urn:li:person:8675309"
WRITTEN = r"Bake (at 9) #today! @friends [see] {menu} <now> a|b *b* _i_ ~x~ C:\oven"


@pytest.fixture
def fake(httpserver):
    return LinkedInFake(httpserver, token=TOKEN)


@pytest.fixture
def page(app, world, fake):
    """A ``linkedin`` channel named ``page`` posting as a member, pointed at the fake."""
    make_channel(app, "linkedin", {"url": fake.base, "author": AUTHOR}, TOKEN, name="page")
    return "page"


def upload(client, world, data: bytes, name: str, alt: str = "") -> dict:
    body, content_type = multipart(data, name, alt=alt)
    answer = client.post("/api/v1/media", headers=world.auth("marketer"), content_type=content_type, data=body)
    assert answer.status_code == 201, answer.json
    return answer.json


def one_post(app, world, page, body="Fresh bread at nine", media=()) -> int:
    return add_actions(app, world.workspace_id, 1, channel=page, payload={"body": body, "media": list(media)})[0]


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_a_post_carries_the_documented_headers_its_text_as_little_text_and_its_urn_becomes_the_provider_id(
        app, world, fake, page):
    action_id = one_post(app, world, page, body=WRITTEN)
    tick(app)
    published = row(app, action_id)
    assert published.status == "published", published.last_error
    [post] = fake.posts
    assert published.provider_id == post["urn"]
    [seen] = fake.seen
    assert seen.path == "/rest/posts"
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
    assert seen.headers["Linkedin-Version"] == linkedin.DEFAULT_VERSION
    assert seen.headers["X-Restli-Protocol-Version"] == "2.0.0"
    assert seen.json == {
        "author": AUTHOR, "visibility": "PUBLIC",
        # Little Text Format: each reserved character escaped, so the post reads exactly as written
        "commentary": r"Bake \(at 9\) \#today! \@friends \[see\] \{menu\} \<now\> a\|b \*b\* \_i\_ \~x\~ C:\\oven",
        "distribution": {"feedDistribution": "MAIN_FEED", "targetEntities": [], "thirdPartyDistributionChannels": []},
        "lifecycleState": "PUBLISHED", "isReshareDisabledByAuthor": False}


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_one_image_is_registered_and_put_before_the_post_and_named_as_its_media(app, client, world, fake, page):
    image = upload(client, world, png_bytes(size=(40, 30)), "loaf.png", alt="A loaf on a board")
    action_id = one_post(app, world, page, media=[image["id"]])
    tick(app)
    assert row(app, action_id).status == "published", row(app, action_id).last_error
    assert [(seen.method, seen.path if not seen.path.startswith("/dms-uploads/") else "upload")
            for seen in fake.seen] == [("POST", "/rest/images"), ("PUT", "upload"), ("POST", "/rest/posts")]
    register, put, _ = fake.seen
    assert register.query == {"action": "initializeUpload"}
    assert register.json == {"initializeUploadRequest": {"owner": AUTHOR}}
    assert register.headers["Linkedin-Version"] == linkedin.DEFAULT_VERSION
    stored = client.get(f"/api/v1/media/{image['id']}/file", headers=world.auth())
    assert put.body == stored.get_data() and put.headers["Content-Type"] == "image/png"
    stored.close()
    assert put.headers["Authorization"] == f"Bearer {TOKEN}"  # the upload URL is on the API's own host
    [urn] = fake.images
    assert fake.posts[0]["content"] == {"media": {"id": urn, "altText": "A loaf on a board"}}


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_several_images_go_as_a_multi_image_post_in_order(app, client, world, fake, page):
    items = [upload(client, world, png_bytes(size=(20 + n, 20)), f"{n}.png", alt=f"Loaf {n}" if n else "")
             for n in range(3)]
    action_id = one_post(app, world, page, media=[item["id"] for item in items])
    tick(app)
    assert row(app, action_id).status == "published", row(app, action_id).last_error
    urns = list(fake.images)
    assert fake.posts[0]["content"] == {"multiImage": {"images": [
        {"id": urns[0]}, {"id": urns[1], "altText": "Loaf 1"}, {"id": urns[2], "altText": "Loaf 2"}]}}


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_the_version_setting_and_a_channels_own_version_are_sent(app, world, fake, monkeypatch):
    monkeypatch.setenv("TICKWORK_LINKEDIN_VERSION", "202604")
    make_channel(app, "linkedin", {"url": fake.base, "author": AUTHOR}, TOKEN, name="page")
    make_channel(app, "linkedin", {"url": fake.base, "author": "urn:li:organization:2414183",
                                   "linkedin_version": "202605"}, TOKEN, name="company")
    one_post(app, world, "page", body="one")
    one_post(app, world, "company", body="two")
    tick(app)
    assert sorted(seen.headers["Linkedin-Version"] for seen in fake.seen) == ["202604", "202605"]
    assert {post["author"] for post in fake.posts} == {AUTHOR, "urn:li:organization:2414183"}


def test_a_server_error_on_the_post_is_an_unknown_outcome_for_a_person(app, world, fake, page):
    fake.fail_next("/rest/posts", 503, {"status": 503, "message": "Service Unavailable"})
    action_id = one_post(app, world, page)
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "outcome_unknown"  # no idempotency key to retry with


def test_a_duplicate_post_is_refused_for_good(app, world, fake, page):
    first, second = add_actions(app, world.workspace_id, 2, channel=page, payload={"body": "Same words"})
    tick(app)
    assert row(app, first).status == "published"
    assert row(app, second).status == "failed" and "Content is a duplicate" in row(app, second).last_error


def test_a_429_honours_retry_after(app, world, fake, page, clock):
    fake.fail_next("/rest/posts", 429, {"status": 429, "message": "Resource level throttle APPLICATION DAY limit"},
                   headers={"Retry-After": "600"})
    action_id = one_post(app, world, page)
    summary = tick(app)
    after = row(app, action_id)
    assert after.status == "queued" and after.next_attempt_at == clock.now() + timedelta(seconds=600)
    assert summary["outcomes"] == {"reverted:retry_later": 1}


def test_a_429_without_retry_after_waits_for_the_daily_reset_at_midnight_utc():
    import httpx

    late = datetime(2026, 6, 1, 22, 30, tzinfo=timezone.utc)
    assert linkedin.retry_after(httpx.Response(429), late) == timedelta(hours=1, minutes=30)
    early = datetime(2026, 6, 1, 2, 0, tzinfo=timezone.utc)
    assert linkedin.retry_after(httpx.Response(429), early) == timedelta(hours=6)  # the longest wait Tickwork honours


def test_an_expired_token_fails_the_row_and_says_the_channel_needs_reconnecting(app, world, fake, page):
    fake.token = "a-newer-token"
    action_id = one_post(app, world, page)
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "reconnect_needed"
    assert "reconnect the LinkedIn channel" in failed.last_error and "expired" in failed.last_error
    assert channel_needs_reconnecting(app, failed.channel_id)


def test_the_token_goes_only_to_linkedins_hosts_or_the_api_base():
    assert linkedin._ours("https://www.linkedin.com/dms-uploads/x", "https://api.linkedin.com")
    assert linkedin._ours("http://127.0.0.1:5000/dms-uploads/x", "http://127.0.0.1:5000")
    assert not linkedin._ours("https://evil.example/linkedin.com", "https://api.linkedin.com")
    assert not linkedin._ours("https://notlinkedin.com/x", "https://api.linkedin.com")


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_text_over_3000_characters_is_refused_at_save_naming_the_channel_and_the_rule(app, client, world, page):
    def new_post(body):
        return client.post("/api/v1/posts", headers=world.auth("marketer"), json={
            "body": body, "targets": [page], "local_time": "2026-06-01T10:00"})

    assert new_post("a" * 3000).status_code == 201
    refused = new_post("a" * 3001)
    assert refused.status_code == 422
    error = refused.json["error"]
    assert (error["field"], error["channel"], error["rule"]) == ("body", page, "text.characters")


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_tickwork_channel_add_makes_a_linkedin_channel_and_checks_its_author(app, world, fake):
    runner = app.test_cli_runner()
    config = json.dumps({"author": "urn:li:organization:2414183"})
    result = runner.invoke(args=["channel", "add", "--workspace", "Acme", "--name", "company", "--kind", "linkedin",
                                 "--url", fake.base, "--secret", TOKEN, "--config", config])
    assert result.exit_code == 0, result.output
    action_id = add_actions(app, world.workspace_id, 1, channel="company", payload={"body": "From the shell"})[0]
    tick(app)
    assert row(app, action_id).status == "published"
    assert fake.posts[0]["author"] == "urn:li:organization:2414183"
    for bad in ({}, {"author": "8675309"}, {"author": AUTHOR, "linkedin_version": "2026-01"}):
        refused = runner.invoke(args=["channel", "add", "--workspace", "Acme", "--name", "bad", "--kind", "linkedin",
                                      "--config", json.dumps(bad)])
        assert refused.exit_code != 0 and "Traceback" not in refused.output
        assert ("author" in refused.output) or ("linkedin_version" in refused.output)


def test_an_organizations_connection_asks_for_the_organization_scope():
    assert "w_organization_social" in linkedin.oauth_scopes({"author": "urn:li:organization:1"})
    assert linkedin.oauth_scopes({"author": AUTHOR}) == ("w_member_social", "openid", "profile")


# The provider alone against the fake (no database): each documented answer, and a failed upload.

def direct(fake, body="Fresh bread at nine", media=()):
    delivery = Delivery(action_id=1, workspace_id=1, channel_id=1, channel_name="page", action_type="publish_post",
                        target_key="page", payload={"body": body}, publish_at=T0, attempt=1,
                        config={"url": fake.base, "author": AUTHOR}, secret=TOKEN, media=tuple(media))
    return linkedin.send(delivery, SendContext(now=T0, timeout=5, http=http_client()))


@pytest.mark.parametrize("status,body,outcome,words", [
    (422, {"status": 422, "serviceErrorCode": 100, "code": "UNPROCESSABLE_ENTITY",
           "message": "/commentary :: length must be at most 3000"},
     SendOutcome.PERMANENT, "length must be at most 3000"),
    (400, {"status": 400, "serviceErrorCode": 100, "code": "BAD_REQUEST",
           "message": "Invalid URN format: urn:li:person:"}, SendOutcome.PERMANENT, "Invalid URN format"),
    (403, {"status": 403, "serviceErrorCode": 100, "code": "ACCESS_DENIED",
           "message": "Not enough permissions to access: partnerApiPostsExternal.CREATE.20260101"},
     SendOutcome.PERMANENT, "Not enough permissions"),
    (426, {"status": 426, "code": "NONEXISTENT_VERSION", "message": "Requested version 202301 is not active"},
     SendOutcome.PERMANENT, "set TICKWORK_LINKEDIN_VERSION"),
    (429, {"status": 429, "message": "Resource level throttle MEMBER DAY limit"}, SendOutcome.RETRY_LATER,
     "throttle"),
    (500, {"status": 500, "message": "Internal Server Error"}, SendOutcome.UNKNOWN, "may or may not have posted"),
    (502, {}, SendOutcome.UNKNOWN, "502"),
    (504, {}, SendOutcome.UNKNOWN, "504"),
])
def test_each_documented_answer_to_a_post_has_its_outcome(fake, status, body, outcome, words):
    fake.fail_next("/rest/posts", status, body)
    result = direct(fake)
    assert result.outcome is outcome and words in result.message and str(status) in result.message
    assert not result.reconnect_needed


def test_a_401_tells_the_dispatcher_the_channel_needs_reconnecting(fake):
    fake.token = "another"
    result = direct(fake)
    assert result.outcome is SendOutcome.PERMANENT and result.reconnect_needed


@pytest.mark.parametrize("step,status,outcome", [
    ("/rest/images", 500, SendOutcome.NOT_SENT), ("upload", 503, SendOutcome.NOT_SENT),
    ("/rest/images", 422, SendOutcome.PERMANENT), ("upload", 429, SendOutcome.RETRY_LATER),
])
def test_a_failed_upload_posts_nothing(fake, step, status, outcome):
    fake.fail_next(step, status, {"status": status, "message": "upload trouble"})
    result = direct(fake, media=[MediaFile(media_id=9, kind="image", mime="image/png", data=b"\x89PNG" + bytes(99))])
    assert result.outcome is outcome and "media item 1" in result.message
    assert fake.requests("POST", "/rest/posts") == []

