"""How each network shows a post's text in the composer's preview (links, mentions, tags), and what goes to a target:
its variant where it has one, the main post for what the variant leaves out."""

from models.channels.providers.rendering import LINK, MENTION, TAG, segments_of
from models.posts.content import content_for, content_of
from models.posts.tables import Post

TEXT = "Ask @alice.bsky.social or @bob: https://bakery.example/breads/sourdough-country-loaf?x=1. #sourdough #2026"


def marked(text: str, kind: str) -> list[tuple[str, str]]:
    return [(s.kind, s.text) for s in segments_of(text, kind) if s.kind != "text"]


def test_the_segments_put_back_together_are_the_text_on_every_network():
    for kind in ("x", "bluesky", "mastodon", "threads", "instagram", "facebook", "linkedin", "telegram", "log", "?"):
        segments = segments_of(TEXT, kind)
        assert "".join(s.href if s.kind == LINK else s.text for s in segments) == TEXT, kind


def test_each_network_marks_what_it_marks():
    link = "https://bakery.example/breads/sourdough-country-loaf?x=1"
    assert marked(TEXT, "x") == [(MENTION, "@alice"), (MENTION, "@bob"), (LINK, "bakery.example/breads/s…"),
                                 (TAG, "#sourdough")]
    # Bluesky mentions only full handles, and shows the path cut to 13 characters and "...".
    assert marked(TEXT, "bluesky") == [(MENTION, "@alice.bsky.social"), (LINK, "bakery.example/breads/sourd..."),
                                       (TAG, "#sourdough")]
    assert marked(TEXT, "mastodon")[2] == (LINK, "bakery.example/breads/sourdoug…")
    # Instagram's captions have no clickable links; LinkedIn and Facebook mark no @name.
    assert (LINK, link) not in marked(TEXT, "instagram") and (MENTION, "@bob") in marked(TEXT, "instagram")
    assert marked(TEXT, "linkedin") == [(LINK, link), (TAG, "#sourdough")]
    assert marked(TEXT, "log") == []


def test_a_mention_or_a_tag_inside_a_link_is_part_of_the_link():
    text = "See https://example.com/@bob/#top now"
    assert marked(text, "mastodon") == [(LINK, "example.com/@bob/#top")]


def test_a_variant_replaces_what_it_names_and_keeps_the_rest():
    post = Post(body="Main", media=[1, 2], variants={"x": {"body": "Short"}, "sky": {"media": []},
                                                     "both": {"body": "Own", "media": [3]}})
    assert content_for(post, "x") == ("Short", [1, 2])
    assert content_for(post, "sky") == ("Main", [])
    assert content_for(post, "both") == ("Own", [3])
    assert content_for(post, "other") == ("Main", [1, 2])
    assert content_of("Main", None, None, "x") == ("Main", [])
