"""The channel form's TLS settings for an smtp relay: typed as text, stored as a boolean, refused
when unusable, and an unverified channel is flagged on the channel page."""

from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session
from tests.integration.smtp_helpers import make_test_ca


def text(answer) -> str:
    return answer.get_data(as_text=True)


def stored_config(app, name: str) -> dict | None:
    with app.app_context(), read_session() as session:
        return session.scalar(select(Channel.config).where(Channel.name == name))


def test_tls_verify_false_is_stored_as_a_boolean_and_the_channel_page_warns(app, world, browser_for):
    admin = browser_for("admin")
    made = admin.post("/channels", {"name": "relay", "kind": "smtp",
                                    "settings": "host = smtp.example.com\nfrom = shop@example.com\ntls_verify = FALSE"})
    assert made.status_code == 303, text(made)[:500]
    assert stored_config(app, "relay") == {"host": "smtp.example.com", "from": "shop@example.com", "tls_verify": False}
    page = text(admin.get(made.headers["Location"]))
    assert "Warning: this channel does not" in page and "tls_verify = false" in page
    assert "TLS not verified" in page
    listing = text(admin.get("/channels"))
    assert listing.count("TLS not verified") == 1 and "Warning: this channel" not in listing


def test_a_verified_relay_shows_no_warning(app, world, browser_for, tmp_path):
    admin = browser_for("admin")
    ca_file = make_test_ca(tmp_path).ca_file
    made = admin.post("/channels", {"name": "relay", "kind": "smtp",
                                    "settings": f"host = smtp.example.com\nfrom = shop@example.com\nca_file = {ca_file}"})
    assert made.status_code == 303, text(made)[:500]
    assert stored_config(app, "relay")["ca_file"] == str(ca_file)
    page = text(admin.get(made.headers["Location"]))
    assert "TLS not verified" not in page and "Warning: this channel" not in page


def test_unusable_tls_settings_are_refused_with_the_reason_and_nothing_is_saved(app, world, browser_for, tmp_path):
    admin = browser_for("admin")
    missing = tmp_path / "relay-ca.pem"
    for settings, words in (
        ("tls_verify = maybe", "tls_verify is true or false (false turns the certificate check off), not &#39;maybe&#39;"),
        ("tls_verify = 0", "tls_verify is true or false"),
        (f"ca_file = {missing}", f"ca_file: there is no file at {missing} on this host."),
        ("security = starttsl", "security is one of starttls, ssl, none"),
    ):
        answer = admin.post("/channels", {"name": "relay", "kind": "smtp",
                                          "settings": f"host = smtp.example.com\nfrom = shop@example.com\n{settings}"})
        assert answer.status_code == 422 and words in text(answer), (settings, text(answer)[:800])
        assert stored_config(app, "relay") is None
