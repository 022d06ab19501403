"""A redirect target taken from the request is a path on this site, or nothing."""

import pytest

from webapp.redirects import same_site_path

REFUSED = [
    "//evil.test", "//evil.test/queue", "/\\evil.test", "\\\\evil.test", "/\\/evil.test",
    "https://evil.test", "https:evil.test", "http://evil.test/", "javascript:alert(1)", "JavaScript:alert(1)",
    "evil.test", "queue", "", " /queue", "/\t/evil.test", "/\n/evil.test", "/\x00", "/queue\ud800",
    # The same, percent-encoded once, twice, or in part.
    "%2F%2Fevil.test", "/%2Fevil.test", "/%2f%2fevil.test", "%2f%5cevil.test", "/%5Cevil.test", "/%5cevil.test",
    "https%3A%2F%2Fevil.test", "javascript%3Aalert(1)", "/%252F%252Fevil.test", "/%255Cevil.test",
    "/%25252F/evil.test", "/%09/evil.test", "/%00", "/%ff%fe", "%68ttps://evil.test",
    "/" + "a" * 3000,
]
ACCEPTED = ["/", "/queue", "/queue?status=failed&channel=main", "/actions/12#timeline", "/calendar?date=2026-06-10",
            "/posts/new?date=2026-06-10&note=caf%C3%A9", "/search?q=100%25", "/a/b:c"]


@pytest.mark.parametrize("target", REFUSED)
def test_another_site_or_a_hidden_one_is_refused(target):
    assert same_site_path(target) is None


@pytest.mark.parametrize("target", ACCEPTED)
def test_a_path_on_this_site_is_kept_as_given(target):
    assert same_site_path(target) == target


@pytest.mark.parametrize("target", [None, 12, b"/queue", ["/queue"]])
def test_anything_but_text_is_refused(target):
    assert same_site_path(target) is None
