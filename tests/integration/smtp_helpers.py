"""What the SMTP tests share: loopback aiosmtpd handlers, a test CA and its server certificate,
and listeners that never answer."""

import asyncio
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PAYLOAD = {"subject": "Bread", "text": "Fresh bread at nine", "to": "ann@example.com"}
USERNAME, PASSWORD = "shop", "oven-Door-7731-secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Mailbox:
    """An SMTP handler that records what it accepts and refuses as told."""

    def __init__(self, rcpt_reply: str | None = None, data_delay: float = 0.0):
        self.messages = []
        self.rcpt_reply = rcpt_reply
        self.data_delay = data_delay
        self.tls_sessions = []  # for each message, whether it arrived over TLS

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if self.rcpt_reply:
            return self.rcpt_reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.data_delay:
            await asyncio.sleep(self.data_delay)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content.decode()))
        # session.ssl is set by STARTTLS; a connection that was TLS from the start shows it on its transport.
        self.tls_sessions.append(session.ssl is not None or server.transport.get_extra_info("ssl_object") is not None)
        return "250 2.0.0 Ok: queued as ABC123"


class Logins:
    """An aiosmtpd authenticator that accepts one username and password and records every attempt.

    ``refusal`` (a reply line such as ``"454 4.7.0 Temporary authentication failure"``) answers
    every attempt, right or wrong, until it is set back to None.
    """

    def __init__(self, username: str = USERNAME, password: str = PASSWORD, refusal: str | None = None):
        self.accepted = (username, password)
        self.attempts = []
        self.refusal = refusal

    def __call__(self, server, session, envelope, mechanism, auth_data):
        given = (auth_data.login.decode(), auth_data.password.decode())
        ok = given == self.accepted and self.refusal is None
        self.attempts.append((mechanism, *given, ok))
        if self.refusal:
            return AuthResult(success=False, handled=False, message=self.refusal)
        # handled=False lets aiosmtpd answer a refusal itself, with 535
        return AuthResult(success=True, auth_data=auth_data) if ok else AuthResult(success=False, handled=False)


@pytest.fixture
def smtp_server():
    """Start loopback aiosmtpd servers (``start(handler, **options)`` returns the port); all stop after the test."""
    started = []

    def start(handler: Mailbox, **options):
        controller = Controller(handler, hostname="127.0.0.1", port=free_port(), **options)
        controller.start()
        started.append(controller)
        return controller.port

    yield start
    for controller in started:
        controller.stop()


@dataclass(frozen=True)
class RelayCA:
    """A CA made for one test, and a certificate it signed for 127.0.0.1 and localhost."""

    ca_file: Path  # the CA's certificate, PEM: what a channel's ca_file points at
    chain_file: Path  # the server's certificate followed by the CA's, PEM
    key_file: Path  # the server's private key, PEM

    def server_context(self) -> ssl.SSLContext:
        """What the loopback SMTP server presents: its certificate and the (self-signed) CA above it."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.chain_file, self.key_file)
        return context


def make_test_ca(directory: Path) -> RelayCA:
    """A self-signed CA and a server certificate it signed, written as PEM files under ``directory``."""
    now = datetime.now(timezone.utc)
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Tickwork test relay CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(ca_ski, critical=False)
          .sign(ca_key, hashes.SHA256()))
    server = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "relay.test")]))
              .issuer_name(ca_name).public_key(server_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
              .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                          x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                             critical=False)
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
              .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    ca_file, chain_file, key_file = directory / "relay-ca.pem", directory / "relay-chain.pem", directory / "relay-key.pem"
    ca_file.write_bytes(ca.public_bytes(pem))
    chain_file.write_bytes(server.public_bytes(pem) + ca.public_bytes(pem))
    key_file.write_bytes(server_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
    return RelayCA(ca_file, chain_file, key_file)


def listener_that_never_accepts() -> tuple[socket.socket, list[socket.socket]]:
    """A listening socket whose accept queue is full, so a new connection's SYN goes unanswered.

    Returns the listener and the connections that fill its queue (close them all after).
    Each filler is a connect with a short timeout; once one times out the queue is full, which
    is checked here rather than assumed.
    """
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    address, fillers = listener.getsockname(), []
    for _ in range(16):
        filler = socket.socket()
        filler.settimeout(0.2)
        try:
            filler.connect(address)
        except (TimeoutError, socket.timeout):
            filler.close()
            return listener, fillers
        fillers.append(filler)
    raise AssertionError("the listener kept accepting connections; the kernel's queue never filled")


def listener_that_never_speaks() -> socket.socket:
    """A listening socket that is never accepted from: a connection is made by the kernel, no greeting ever comes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    return listener
