"""The channel page says what happens to a send whose outcome is unknown, for the channel's kind."""

from tests.web.test_pages import text


def test_each_channel_page_names_its_kinds_rule_for_an_unknown_outcome(world, browser_for):
    admin = browser_for("admin")
    expected = {
        "bluesky": ("handle = acme.bsky.social", "asked of Bluesky"),
        "postmark": ("from = news@example.com", "failed for a person to decide (never re-sent)"),
        "webhook": ("url = https://example.com/h", "retried with the same Idempotency-Key"),
        "twilio": ("account_sid = AC1\nfrom = +15555550100", "failed for a person to decide (never re-sent)"),
    }
    for kind, (settings, words) in expected.items():
        made = admin.post("/channels", {"name": kind, "kind": kind, "settings": settings, "secret": "s3cr3t-value"})
        assert made.status_code == 303, text(made)
        page = text(admin.get(made.headers["Location"]))
        rule = page.split('id="unknown-outcome-rule"', 1)[1].split("</p>", 1)[0]
        assert words in rule, (kind, rule)
    assert "Postmark: found, it is published; not found 5 minutes after the send" in text(admin.get("/channels"))
