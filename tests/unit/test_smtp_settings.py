"""An smtp channel's settings are checked when it is saved: port, security, ca_file, tls_verify."""

import pytest

from models.channels.operations import validate_channel
from models.core.errors import InvalidInput
from tests.integration.smtp_helpers import make_test_ca

BASE = {"host": "relay.example.net", "from": "news@example.com"}


@pytest.fixture(scope="module")
def ca_file(tmp_path_factory):
    return str(make_test_ca(tmp_path_factory.mktemp("ca")).ca_file)


def refused(settings: dict) -> str:
    with pytest.raises(InvalidInput) as caught:
        validate_channel("relay", "smtp", {**BASE, **settings})
    assert caught.value.field == "settings"
    return caught.value.message


@pytest.mark.parametrize("settings", [
    {}, {"tls_verify": True}, {"tls_verify": False}, {"security": "ssl", "port": 465, "tls_verify": False},
    {"port": 25, "security": "starttls", "tls_verify": False},
])
def test_settings_a_relay_can_use_are_accepted(settings):
    validate_channel("relay", "smtp", {**BASE, **settings})


def test_a_ca_file_that_holds_a_ca_certificate_is_accepted(ca_file):
    validate_channel("relay", "smtp", {**BASE, "ca_file": ca_file})
    validate_channel("relay", "smtp", {**BASE, "ca_file": ca_file, "security": "ssl", "tls_verify": True})


def test_a_ca_file_that_does_not_exist_is_refused_naming_the_path(tmp_path):
    missing = tmp_path / "nowhere" / "relay-ca.pem"
    assert refused({"ca_file": str(missing)}) == f"ca_file: there is no file at {missing} on this host."
    assert "no file at" in refused({"ca_file": str(tmp_path)})  # a directory is not a file


def test_a_ca_file_that_is_not_a_pem_certificate_is_refused(tmp_path):
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("this is not a certificate\n")
    assert refused({"ca_file": str(not_pem)}) == f"ca_file: {not_pem} holds no PEM certificate."


def test_an_empty_or_huge_ca_file_is_refused_without_being_read(tmp_path):
    empty = tmp_path / "empty.pem"
    empty.write_bytes(b"")
    assert refused({"ca_file": str(empty)}) == f"ca_file: {empty} holds no PEM certificate."
    huge = tmp_path / "huge.pem"
    with huge.open("wb") as sparse:
        sparse.truncate(64 * 1024 * 1024)
    assert "larger than 1024 KiB" in refused({"ca_file": str(huge)})


@pytest.mark.parametrize("path", ["relay-ca.pem", "", 42, None, ["a"]])
def test_a_ca_file_that_is_not_an_absolute_path_is_refused(path):
    assert "absolute path of a PEM file" in refused({"ca_file": path})


@pytest.mark.parametrize("value", ["false", "no", "0", 0, 1, None, "True"])
def test_a_tls_verify_that_is_not_a_boolean_is_refused(value):
    assert refused({"tls_verify": value}).startswith(f"tls_verify is true or false (false turns the certificate "
                                                     f"check off), not {value!r}")


def test_ca_file_and_tls_verify_false_together_are_refused(ca_file):
    assert "either ca_file" in refused({"ca_file": ca_file, "tls_verify": False})


@pytest.mark.parametrize("settings", [{"security": "none", "tls_verify": False}, {"port": 25, "tls_verify": False}])
def test_tls_settings_on_a_channel_without_tls_are_refused(settings, ca_file):
    assert "security is none" in refused(settings)
    assert "security is none" in refused({**{k: v for k, v in settings.items() if k != "tls_verify"},
                                          "ca_file": ca_file})


@pytest.mark.parametrize("settings, words", [
    ({"security": "starttsl"}, "security is one of starttls, ssl, none, not 'starttsl'"),
    ({"security": "STARTTLS"}, "security is one of"),
    ({"port": "587"}, "port is a whole number from 1 to 65535"),
    ({"port": 0}, "port is a whole number"),
    ({"port": 70000}, "port is a whole number"),
    ({"port": True}, "port is a whole number"),
])
def test_a_port_or_security_the_provider_could_not_use_is_refused(settings, words):
    assert words in refused(settings)


def test_other_kinds_do_not_read_the_smtp_settings():
    validate_channel("hook", "webhook", {"url": "https://example.com/h", "tls_verify": "maybe"})
