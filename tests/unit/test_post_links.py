"""Each network's link to a published post, built from the provider id its send returned."""

import pytest

from models.channels.providers import PROVIDERS, post_url

DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"


@pytest.mark.parametrize("kind, config, provider_id, link", [
    ("mastodon", {"url": "https://mastodon.example/"}, "113456789012345678",
     "https://mastodon.example/statuses/113456789012345678"),
    ("bluesky", {"handle": "acme.bsky.social"}, f"at://{DID}/app.bsky.feed.post/3l3qo2vuowo2b bafyreib2rxk3rh6",
     f"https://bsky.app/profile/{DID}/post/3l3qo2vuowo2b"),
    ("x", {}, "1460323737035677698", "https://x.com/i/web/status/1460323737035677698"),
    ("linkedin", {"author": "urn:li:organization:5515715"}, "urn:li:share:6844785523593134080",
     "https://www.linkedin.com/feed/update/urn:li:share:6844785523593134080"),
    ("linkedin", {}, "urn:li:ugcPost:7000000000000000001",
     "https://www.linkedin.com/feed/update/urn:li:ugcPost:7000000000000000001"),
    ("facebook", {"page_id": "1234"}, "1234_5678", "https://www.facebook.com/1234_5678"),
    ("slack", {"channel": "C0123456789"}, "C0123456789:1712345678.123456",
     "https://slack.com/archives/C0123456789/p1712345678123456"),
    ("telegram", {"chat_id": "@acme_news"}, "@acme_news:42", "https://t.me/acme_news/42"),
    ("telegram", {"chat_id": -1001234567890}, "-1001234567890:42", "https://t.me/c/1234567890/42"),
])
def test_a_published_post_links_to_its_place_on_the_network(kind, config, provider_id, link):
    assert post_url(kind, config, provider_id) == link


@pytest.mark.parametrize("kind, config, provider_id", [
    ("threads", {}, "17890000000000001"),  # a permalink needs the shortcode
    ("instagram", {}, "17890000000000001"),
    ("discord", {"url": "https://discord.com/api/webhooks/1"}, "1200000000000000000"),
    ("telegram", {"chat_id": 123456}, "123456:42"),  # a private chat has no address
    ("webhook", {"url": "https://hooks.example/x"}, "anything"),
    ("smtp", {}, "<message@id>"),
    ("mastodon", {}, "1134"),  # no instance to link to
    ("mastodon", {"url": "javascript:alert(1)//"}, "1134"),
    ("mastodon", {"url": "https://m.example"}, "../../admin"),
    ("bluesky", {}, "https://evil.example/ bafy"),
    ("x", {}, "12/../../evil"),
    ("linkedin", {}, "javascript:alert(1)"),
    ("facebook", {}, "1234_5678/../x"),
    ("slack", {}, "C01234:not-a-ts"),
    ("x", {}, ""),
    ("x", {}, None),
    ("no-such-kind", {}, "1"),
])
def test_no_link_where_none_can_be_derived_and_never_one_built_from_a_strange_id(kind, config, provider_id):
    assert post_url(kind, config, provider_id) is None


def test_every_social_network_declares_how_its_posts_are_linked():
    social = {"mastodon", "bluesky", "x", "linkedin", "threads", "facebook", "instagram", "discord", "slack", "telegram"}
    assert {kind for kind, provider in PROVIDERS.items() if hasattr(provider, "post_url")} == social
