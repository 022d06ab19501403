"""Bluesky's record keys (TIDs) and rich-text facets, as pure functions; and its two text rules."""

from datetime import datetime, timedelta, timezone

import pytest

from models.channels.providers import bluesky
from models.channels.providers.accepts import text_breaks
from models.channels.providers.atproto import TID_PATTERN, byte_offset, facets_of, tid, tid_for, tid_parts

T = datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)


def test_a_tid_is_13_sortable_base32_characters_of_microseconds_and_a_clock_id():
    assert tid(0, 0) == "2222222222222"
    assert TID_PATTERN.match(tid(2**53 - 1, 1023))
    assert tid_parts(tid(1_780_315_200_123_456, 42)) == (1_780_315_200_123_456, 42)
    # atproto's interop examples are valid TIDs and read back to what they encode
    for example in ("3jzfcijpj2z2a", "7777777777777", "3zzzzzzzzzzzz"):
        assert tid(*tid_parts(example)) == example


def test_a_rows_record_key_is_the_same_on_every_attempt_and_differs_between_rows():
    assert tid_for(T, 7) == tid_for(T, 7)
    assert tid_for(T, 7) != tid_for(T, 8)
    assert tid_parts(tid_for(T, 1031)) == (int(T.timestamp()) * 1_000_000 + 123456, 1031 % 1024)
    assert tid_for(T, 7) < tid_for(T + timedelta(microseconds=1), 7)  # sortable by time, as TIDs are


def test_a_naive_created_at_is_refused():
    with pytest.raises(ValueError):
        tid_for(datetime(2026, 6, 1), 1)


def _spans(text, facets):
    data = text.encode()
    return [(data[f["index"]["byteStart"]:f["index"]["byteEnd"]].decode(), f["features"][0]) for f in facets]


def test_an_emoji_before_a_link_moves_the_link_facet_by_its_utf8_bytes():
    text = "👩‍👩‍👧 https://bakery.example/menu"
    (facet,) = facets_of(text)
    assert facet["index"] == {"byteStart": len("👩‍👩‍👧 ".encode()), "byteEnd": len(text.encode())}
    assert facet["index"]["byteStart"] == 19 and byte_offset(text, text.index("h")) == 19


def test_links_leave_trailing_punctuation_out():
    text = "Menu: https://bakery.example/menu. And (https://bakery.example/hours)!"
    assert [feature["uri"] for _, feature in _spans(text, facets_of(text))] == [
        "https://bakery.example/menu", "https://bakery.example/hours"]


def test_a_mention_is_linked_only_when_its_handle_resolves():
    text = "Thanks @alice.bsky.social and @bob.example.com, not email@alice.bsky.social"
    facets = facets_of(text, {"alice.bsky.social": "did:plc:alice"}.get)
    assert _spans(text, facets) == [("@alice.bsky.social", {"$type": "app.bsky.richtext.facet#mention",
                                                            "did": "did:plc:alice"})]


def test_hashtags_drop_trailing_punctuation_and_skip_numbers_and_long_tags():
    text = f"#bread, #2024 #café! #{'a' * 65} ＃wide"
    assert [feature["tag"] for _, feature in _spans(text, facets_of(text))] == ["bread", "café", "wide"]


def test_bluesky_text_is_held_to_300_graphemes_and_3000_utf8_bytes():
    assert text_breaks(bluesky.accepts, {}, "a" * 300) is None
    assert text_breaks(bluesky.accepts, {}, "a" * 301).rule == "text.graphemes"
    family = "👩‍👩‍👧‍👦"  # one grapheme, 25 bytes
    broken = text_breaks(bluesky.accepts, {}, family * 121)
    assert broken.rule == "text.utf8_bytes" and "3,025 UTF-8 bytes" in broken.message


def test_the_provider_id_holds_the_records_uri_and_cid():
    assert bluesky.record_ref("at://did:plc:x/app.bsky.feed.post/3l2 bafyrei1") == (
        "at://did:plc:x/app.bsky.feed.post/3l2", "bafyrei1")


@pytest.mark.parametrize("settings,words", [
    ("url = https://bsky.social", "needs the account's handle"),
    ("handle = @acme.bsky.social", "without the @"),
    ("handle = acme.bsky.social\nurl = http://10.0.0.7", "not allowed"),
])
def test_a_bluesky_channel_is_refused_without_a_handle_or_with_a_refused_pds(settings, words):
    from models.channels.operations import validate_channel
    from models.core.errors import InvalidInput
    from webapp.views.channels import parse_settings

    with pytest.raises(InvalidInput) as refused:
        validate_channel("sky", "bluesky", parse_settings(settings))
    assert words in str(refused.value)
