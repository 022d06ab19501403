"""The egress policy's table: which addresses are refused in every notation, what the allow list
opens, how a bad allow list is refused at start, and how a far end's words are shown."""

import ipaddress
import re

import pytest

from models.core import egress
from models.core.errors import ConfigurationError, InvalidInput

NOTHING_ALLOWED = egress.parse_allow("")

# Every way of writing an address that is not on the internet, and what the refusal calls it.
REFUSED = [
    ("127.0.0.1", "loopback"),
    ("2130706433", "loopback"),  # one decimal number
    ("0x7f000001", "loopback"),  # one hexadecimal number
    ("0177.0.0.1", "loopback"),  # octal parts
    ("0x7f.1", "loopback"),
    ("127.1", "loopback"),  # two parts
    ("[::1]", "loopback"),
    ("::1", "loopback"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "this network"),
    ("::", "unspecified"),
    ("10.1.2.3", "private"),
    ("172.16.0.9", "private"),
    ("192.168.1.1", "private"),
    ("fd12:3456::1", "private"),
    ("fc00::1", "private"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.254", "carrier-grade NAT"),
    ("224.0.0.251", "multicast"),
    ("ff02::1", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.2.10", "reserved"),
    ("169.254.169.254", "cloud metadata"),
    ("fd00:ec2::254", "cloud metadata"),
    ("100.100.100.200", "cloud metadata"),
    ("168.63.129.16", "cloud metadata"),
    ("::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1, a loopback"),
    ("::ffff:7f00:1", "IPv4-mapped form of 127.0.0.1, a loopback"),
    ("::ffff:169.254.169.254", "IPv4-mapped form of 169.254.169.254, a cloud metadata"),
    ("::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1, a private"),
    ("::127.0.0.1", "reserved"),  # IPv4-compatible, deprecated
    ("64:ff9b::7f00:1", "NAT64 form of 127.0.0.1, a loopback"),
    ("64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254, a cloud metadata"),
    ("64:ff9b:1::1", "local-use NAT64"),
    ("2002:7f00:1::1", "6to4 form of 127.0.0.1, a loopback"),
    ("2002:c0a8:101::1", "6to4 form of 192.168.1.1, a private"),
    ("2001:0:4136:e378::1", "reserved"),  # Teredo
    ("2001:db8::1", "reserved"),
    ("100::1", "reserved"),
]
PUBLIC = ["93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1",
          "::ffff:8.8.8.8", "100.128.0.1", "172.32.0.1", "11.0.0.1"]


@pytest.mark.parametrize("host, words", REFUSED)
def test_an_internal_address_is_refused_in_every_notation(host, words):
    with pytest.raises(egress.DestinationRefused) as refused:
        NOTHING_ALLOWED.addresses(host, 80)
    assert str(refused.value).startswith("destination not allowed: ")
    assert words in refused.value.reason
    assert "TICKWORK_EGRESS_ALLOW" in refused.value.reason


def test_every_notation_is_read_as_the_c_library_reads_it():
    for host in ("127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1", "127.1", "127.0.1", "[::ffff:127.0.0.1]"):
        address = egress.literal_address(host)
        assert address is not None and (address == ipaddress.ip_address("127.0.0.1")
                                        or address.ipv4_mapped == ipaddress.ip_address("127.0.0.1")), host
    assert egress.literal_address("example.com") is None
    assert egress.literal_address("cafe.be") is None


@pytest.mark.parametrize("host", PUBLIC)
def test_a_public_address_goes_through(host):
    assert NOTHING_ALLOWED.addresses(host, 443) == [str(ipaddress.ip_address(host))]


def test_a_name_that_resolves_to_loopback_is_refused_unless_its_name_or_network_is_allowed():
    with pytest.raises(egress.DestinationRefused, match="localhost resolves to a loopback address"):
        NOTHING_ALLOWED.addresses("localhost", 80)
    with pytest.raises(egress.DestinationRefused):
        NOTHING_ALLOWED.addresses("LOCALHOST.", 80)
    assert "127.0.0.1" in egress.parse_allow("localhost").addresses("LocalHost.", 80)
    assert "127.0.0.1" in egress.parse_allow("127.0.0.0/8,::1/128").addresses("localhost", 80)


def test_the_allow_list_opens_networks_and_names_but_a_metadata_address_only_by_itself():
    policy = egress.parse_allow(" 10.0.0.0/8 , 169.254.0.0/16,::1/128, relay.internal. ,")
    assert policy.refusal(ipaddress.ip_address("10.9.8.7")) is None
    assert policy.refusal(ipaddress.ip_address("::ffff:10.9.8.7")) is None  # the mapped form of an allowed one
    assert policy.refusal(ipaddress.ip_address("::1")) is None
    assert policy.refusal(ipaddress.ip_address("169.254.7.7")) is None
    assert policy.refusal(ipaddress.ip_address("192.168.0.1")) == "a private address"
    assert policy.refusal(ipaddress.ip_address("169.254.169.254")) == "a cloud metadata address"
    assert policy.allows_name("Relay.Internal") and not policy.allows_name("other.internal")
    exact = egress.parse_allow("169.254.169.254/32")
    assert exact.refusal(ipaddress.ip_address("169.254.169.254")) is None
    assert exact.refusal(ipaddress.ip_address("169.254.169.253")) == "a cloud metadata address"
    assert policy.allowing(["192.168.0.0/16"]).refusal(ipaddress.ip_address("192.168.0.1")) is None


@pytest.mark.parametrize("text, words", [
    ("10.0.0.1/8", "'10.0.0.1/8' is not a network"),
    ("10.0.0.0/33", "'10.0.0.0/33' is not a network"),
    ("127.1", "'127.1' is not a network"),
    ("relay internal", "'relay internal' is neither a network"),
    ("*.example.com", "is neither a network"),
    ("http://relay.internal", "is not a network"),
    ("300.1.1.1", "is neither a network"),
])
def test_a_bad_allow_entry_is_refused_at_start_naming_it(text, words):
    with pytest.raises(ConfigurationError, match="TICKWORK_EGRESS_ALLOW") as refused:
        egress.parse_allow(f"127.0.0.0/8,{text}")
    assert words in str(refused.value)


def test_the_app_refuses_to_start_with_a_bad_allow_list():
    from webapp.config import finish_settings

    config = {"SECRET_KEY": "k" * 40, "SQLALCHEMY_DATABASE_URI": "sqlite:///:memory:", "TICKWORK_EGRESS_ALLOW": "10.0.0.1/8"}
    with pytest.raises(ConfigurationError, match="TICKWORK_EGRESS_ALLOW: '10.0.0.1/8'"):
        finish_settings(config, "/nonexistent-instance")


@pytest.mark.parametrize("url, words", [
    ("file:///etc/passwd", "must be an http:// or https:// URL"),
    ("gopher://example.com/", "must be an http:// or https:// URL"),
    ("ftp://example.com/", "must be an http:// or https:// URL"),
    ("http:///nohost", "has no host"),
    ("not a url", "must be an http:// or https:// URL"),
    ("http://999.1.1.1/", "is not a valid URL"),
])
def test_only_http_and_https_urls_are_destinations(url, words):
    with pytest.raises(InvalidInput) as refused:
        egress.check_url(url, field="url")
    assert refused.value.field == "url" and words in refused.value.message


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8080/hook", "http://localhost/", "http://2130706433/", "http://0x7f000001/",
    "http://0177.0.0.1/", "http://127.1/", "http://[::1]/", "http://0.0.0.0:9/", "http://x@127.0.0.1/",
    "http://user:pw@127.0.0.1:80/", "https://169.254.169.254/latest/meta-data/", "http://[::ffff:127.0.0.1]/",
    "http://[fd00:ec2::254]/", "http://%31%32%37.0.0.1/", "HTTP://LOCALHOST./x",
])
def test_check_url_refuses_an_internal_destination_naming_the_field(url, egress_allow):
    egress_allow("")
    with pytest.raises(InvalidInput) as refused:
        egress.check_url(url, field="settings.url")
    assert refused.value.field == "settings.url" and refused.value.code == "destination_not_allowed"
    assert "destination not allowed" in refused.value.message


def test_check_url_accepts_a_public_address_and_a_name_that_does_not_resolve(egress_allow):
    egress_allow("")
    egress.check_url("https://93.184.215.14/hook", field="url")
    egress.check_url("https://no-such-host.invalid/hook", field="url")  # checked again at every connection
    egress.check_host("no-such-relay.invalid", field="host")
    with pytest.raises(InvalidInput, match="host: destination not allowed: localhost resolves to a loopback"):
        egress.check_host("localhost", field="host")
    with pytest.raises(InvalidInput, match="is a host name or an address"):
        egress.check_host("relay.example/25", field="host")


def test_a_redirect_location_is_judged_the_same_way(egress_allow):
    egress_allow("127.0.0.1/32")
    assert egress.url_refusal("http://127.0.0.1:9/") is None
    assert "loopback" in egress.url_refusal("http://127.0.0.2:9/")
    assert "http://" in egress.url_refusal("file:///etc/passwd")


def test_a_far_ends_words_are_shown_without_control_characters_and_trimmed():
    shown = egress.shown_text("Bad\x1b[2J token\r\nX-Injected: 1\u202e\u0000 " + "x" * 500, 60)
    assert "\x1b" not in shown and "\r" not in shown and "\n" not in shown and "\u202e" not in shown
    assert "\x00" not in shown and len(shown) == 60 and shown.endswith("…")
    assert shown.startswith("Bad [2J token X-Injected: 1 ")
    assert egress.shown_text(b"caf\xc3\xa9 ok") == "café ok"


OWN_CONNECTIONS = re.compile(r"\bhttpx\.(Client|AsyncClient|HTTPTransport|AsyncHTTPTransport|get|post|put|patch|"
                             r"delete|request|stream)\(|\bsocket\.(create_connection|socket)\(|\bsmtplib\.SMTP(_SSL)?\(|"
                             r"\burllib\.request\b|\bhttp\.client\b|\bimport requests\b|\bhttpcore\.\w*(Pool|Backend)\(")


def test_no_module_opens_a_connection_around_the_egress_policy():
    """Every outbound client and socket in the shells and the domain comes from models/core/egress.py."""
    from tests.conftest import ROOT

    found = []
    for package in ("webapp", "jobs", "models"):
        for source in (ROOT / package).rglob("*.py"):
            if source == ROOT / "models" / "core" / "egress.py":
                continue
            for number, line in enumerate(source.read_text().splitlines(), start=1):
                if OWN_CONNECTIONS.search(line):
                    found.append(f"{source.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
