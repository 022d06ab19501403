"""The outside reviewer's public page is rate limited: per review link (its page and its decisions together) and per
address across links, each refusal a 429 page that says what happened, with Retry-After, deciding nothing."""

import pytest

from models.core.database import read_session
from models.posts.tables import Post
from tests.conftest import add_member_with_token

BASE_URL = "https://tickwork.example"
HERE, THERE = {"REMOTE_ADDR": "203.0.113.9"}, {"REMOTE_ADDR": "198.51.100.7"}


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_BASE_URL=BASE_URL, TICKWORK_REVIEW_LINK_RATE_LIMIT="3 per minute",
                      TICKWORK_REVIEW_ADDRESS_RATE_LIMIT="5 per minute")
    return app_config


def _review_link(app, client, world) -> tuple[int, str]:
    add_member_with_token(app, world, "reviewer")
    created = client.post("/api/v1/posts", headers=world.auth("marketer"),
                          json={"body": "Fresh bread", "targets": ["main"], "local_time": "2026-06-01T09:00"})
    post_id = created.json["id"]
    made = client.post(f"/api/v1/posts/{post_id}/review-links", headers=world.auth("reviewer"),
                       json={"reviewer_name": "Dana at Client Co"})
    assert made.status_code == 201, made.json
    return post_id, made.json["url"].rsplit("/", 1)[1]


def _status(app, post_id) -> str:
    with app.app_context(), read_session() as session:
        return session.get(Post, post_id).status


def test_a_review_link_is_limited_on_its_own_page_and_decisions_together(app, client, world):
    post_id, token = _review_link(app, client, world)
    assert client.get(f"/review/{token}", environ_base=HERE).status_code == 200
    assert client.post(f"/review/{token}", data={"decision": "comment", "comment": "Looks tasty"},
                       environ_base=THERE).status_code == 200
    assert client.get(f"/review/{token}", environ_base=THERE).status_code == 200
    refused = client.post(f"/review/{token}", data={"decision": "approve"}, environ_base=HERE)
    page = refused.get_data(as_text=True)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert "<h1>Too many requests</h1>" in page and "Too many requests for this review link" in page
    assert "Nothing was decided by the request that was refused." in page
    assert _status(app, post_id) == "draft"  # the refused decision changed nothing
    assert client.get(f"/review/{token}", environ_base={"REMOTE_ADDR": "192.0.2.44"}).status_code == 429


def test_one_address_is_limited_across_review_links_made_up_ones_included(app, client, world):
    _, token = _review_link(app, client, world)
    for n in range(5):
        assert client.get(f"/review/{'x' * 42}{n}", environ_base=HERE).status_code == 404
    refused = client.get(f"/review/{token}", environ_base=HERE)
    assert refused.status_code == 429 and "Too many requests for this review link" in refused.get_data(as_text=True)
    assert client.get(f"/review/{token}", environ_base=THERE).status_code == 200  # another address
