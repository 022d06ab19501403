"""LinkedIn's Little Text Format: every reserved character is escaped, so a post reads exactly as written."""

import pytest

from models.channels.providers.linkedin import little_text


@pytest.mark.parametrize("char", list("\\|{}@[]()<>#*_~"))
def test_each_reserved_character_is_backslash_escaped(char):
    assert little_text(f"a{char}b") == f"a\\{char}b"


def test_plain_text_and_unicode_pass_through_unchanged():
    text = "Crème brûlée, 3 € — 🍞 today! Ask: why? 50% off; a/b, a-b, a.b, \"quoted\" 'single'"
    assert little_text(text) == text


def test_a_backslash_is_escaped_first_so_no_escape_can_be_forged():
    assert little_text("\\@") == "\\\\\\@"  # a literal backslash, then a literal @
    assert little_text("@[Acme](urn:li:organization:1)") == "\\@\\[Acme\\]\\(urn:li:organization:1\\)"
