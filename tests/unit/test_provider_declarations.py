"""Every provider declares what it accepts, and text is counted as each network counts it."""

import pytest

from models.channels.providers import PROVIDERS, accepts_for
from models.channels.providers.accepts import DEFAULT, Accepts, MediaFacts, TextRule, media_breaks, text_breaks
from models.channels.providers.text_length import graphemes, links_as_23, utf8_bytes, x_weighted


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_every_registered_provider_declares_what_it_accepts(kind):
    declared = getattr(PROVIDERS[kind], "accepts", None)
    assert isinstance(declared, Accepts), f"{kind}'s module sets no accepts = Accepts(...)"
    assert declared.text and all(rule.limit > 0 for rule in declared.text)
    assert accepts_for(kind) is declared


def test_a_kind_without_a_declaration_gets_the_default():
    assert accepts_for("no-such-kind") is DEFAULT


@pytest.mark.parametrize("text, counted", [
    ("hello", 5), ("👍🏽", 1), ("👨‍👩‍👧‍👦", 1), ("é", 1), ("e\u0301", 1), ("🇫🇷🇩🇪", 2), ("a\r\nb", 3),
])
def test_graphemes_are_what_a_reader_sees_as_one_character(text, counted):
    assert graphemes(text) == counted


@pytest.mark.parametrize("text, counted", [
    ("a" * 280, 280),
    ("こ" * 140, 280),  # CJK weighs 2
    ("see https://example.com/" + "a" * 200, 4 + 23),  # a link is 23 whatever its length
    ("👨‍👩‍👧‍👦", 2),  # an emoji sequence is one unit of weight 2
    ("café", 4), ("cafe\u0301", 4),  # normalised first
    ("\u2014", 1), ("\u2018quoted\u2019", 8),  # general punctuation weighs 1
])
def test_x_counts_by_weight(text, counted):
    assert x_weighted(text) == counted


def test_mastodon_counts_links_as_23_and_bytes_are_bytes():
    assert links_as_23("read https://example.com/" + "x" * 100 + " now") == 5 + 23 + 4
    assert utf8_bytes("€") == 3 and utf8_bytes("👍🏽") == 8


def test_text_breaks_names_the_first_rule_broken_and_a_channel_may_only_lower_a_limit():
    rules = Accepts(text=(TextRule(300, "graphemes"), TextRule(3000, "utf8_bytes")))
    assert text_breaks(rules, {}, "👍🏽" * 300) is None
    assert text_breaks(rules, {}, "👍🏽" * 301).rule == "text.graphemes"
    assert text_breaks(rules, {}, "👨‍👩‍👧‍👦" * 150).rule == "text.utf8_bytes"
    assert text_breaks(rules, {"max_length": 10}, "x" * 11).rule == "text.graphemes"
    assert text_breaks(rules, {"max_length": 5000}, "x" * 301) is not None  # never raised by a setting
    assert text_breaks(rules, {"max_length": True}, "x" * 300) is None


def test_media_breaks_checks_each_rule_and_leaves_what_preparing_fixes():
    mastodon = accepts_for("mastodon")
    photo = MediaFacts(1, "image", "image/jpeg", 4_000_000, 4000, 3000)
    assert media_breaks(mastodon, [photo]) is None
    assert media_breaks(mastodon, [photo] * 5).rule == "media.count"
    assert media_breaks(mastodon, [MediaFacts(2, "image", "image/jpeg", 20_000_000, 4000, 3000)]) is None  # prepared
    assert media_breaks(accepts_for("twilio"), [photo]).rule == "media.none"
    assert media_breaks(accepts_for("log"), [photo] * 10) is None
    long_clip = MediaFacts(3, "video", "video/mp4", 1000, 320, 240, duration=300)
    from models.channels.providers.accepts import MediaRules, VideoRule
    short = Accepts(media=MediaRules(video=VideoRule(max_seconds=140)))
    assert media_breaks(short, [long_clip]).rule == "video.duration"
    unknown_length = MediaFacts(4, "video", "video/mp4", 1000, 320, 240, duration=None)
    assert media_breaks(short, [unknown_length]) is None


def test_an_instances_own_limit_may_raise_mastodons_and_a_channel_may_lower_the_number_of_items():
    mastodon = accepts_for("mastodon")
    assert text_breaks(mastodon, {}, "x" * 501).rule == "text.links_as_23"
    assert text_breaks(mastodon, {"max_length": 5000}, "x" * 5000) is None  # the instance said so when saved
    assert text_breaks(mastodon, {"max_length": 5000}, "x" * 5001) is not None
    photo = MediaFacts(1, "image", "image/png", 1000, 40, 30)
    assert media_breaks(mastodon, [photo] * 3, config={"max_media_attachments": 2}).rule == "media.count"
    assert media_breaks(mastodon, [photo] * 4, config={"max_media_attachments": 9}) is None  # raise: never
    assert media_breaks(mastodon, [photo] * 5, config={"max_media_attachments": 9}).rule == "media.count"


def test_a_caption_rule_binds_the_text_only_when_the_post_has_media():
    telegram = accepts_for("telegram")
    photo = MediaFacts(1, "image", "image/png", 1000, 40, 30)
    assert media_breaks(telegram, [photo], "x" * 1024) is None
    assert media_breaks(telegram, [photo], "x" * 1025).rule == "caption.characters"
    assert media_breaks(telegram, [], "x" * 1025) is None and text_breaks(telegram, {}, "x" * 4096) is None
    assert media_breaks(accepts_for("discord"), [photo], "x" * 2000) is None  # no caption rule: the text's own


def test_a_link_counts_what_the_instance_reserves_for_it():
    mastodon = accepts_for("mastodon")
    text = "x" * 470 + " https://example.com/" + "a" * 100  # 471 + a link
    assert text_breaks(mastodon, {}, text) is None  # 494 with links at 23
    assert text_breaks(mastodon, {"characters_reserved_per_url": 23}, text) is None
    broken = text_breaks(mastodon, {"characters_reserved_per_url": 40}, text)  # 511
    assert broken.rule == "text.links_as_23" and "511 characters (links 40)" in broken.message
