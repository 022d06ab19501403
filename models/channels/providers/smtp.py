"""``smtp``: email through an SMTP server.

Channel config: ``host``, ``port`` (default 587), ``from``, optional ``username`` and
``security`` (``starttls``, ``ssl`` or ``none``; default ``starttls`` unless the port is
25), and for a relay with a certificate of its own either ``ca_file`` (a PEM file of the
CA that signed it: only the certificates in it are trusted) or ``tls_verify = false`` (the
certificate is not checked at all: anyone on the path can read the mail and the password,
so the channel page warns). Without either, the server's certificate and name are checked
against the system's trust store. Secret: the password. Payload: ``subject``, ``text`` or ``body``, optional ``html``,
optional ``to`` (else the target key), optional ``headers`` (extra headers by name, such as
``List-Unsubscribe``; see :func:`~models.channels.providers.base.payload_headers`).

Until the DATA command the server has accepted nothing, so a failure there means not
sent; once the message body is on the wire, a dropped connection or a timeout means the
outcome is unknown. The Message-ID is derived from the action id, so a recipient's mail
system can recognise a repeat. A login refused with a 5xx, a certificate that cannot be
trusted, or a server that offers no STARTTLS (or no AUTH to a channel with a username)
fails for good: another attempt would meet the same settings. A login refused with a 4xx
(454, "try again later") is retried. Setting up a connection (connect, greeting, EHLO,
STARTTLS, login) has one deadline, the provider timeout, however slowly the server
trickles its answers; a server that never answers is "not sent", so the row is retried.

The connection goes through the egress policy (:func:`models.core.egress.connect_socket`):
a relay whose address the policy refuses fails for good, "destination not allowed", and
nothing is sent. Until the relay has greeted and answered EHLO, every failure (a closed
port, a silent one, one speaking HTTP or SSH, a greeting that is not 220) says the same
words, "could not reach the relay", and never repeats what the far end said: an SMTP
channel is no port scanner or banner grabber. What an SMTP server says after that is shown
through :func:`~models.core.egress.shown_text`.

A dispatch sends the messages of one channel in a chunk over one or two connections
(:func:`open_session`), each carrying its share: one login, then MAIL, RCPT and DATA per
message, each message with its own outcome. A connection that breaks mid-chunk decides only the message on it at the time
(not sent before DATA, unknown during it); the next message opens a new connection.
"""

import os
import smtplib
import socket
import ssl
import time
from email.message import EmailMessage
from email.utils import formatdate

from models.channels.providers.base import (
    BadHeaders,
    Delivery,
    SendContext,
    SendOutcome,
    SendResult,
    payload_headers,
    payload_text,
)
from models.channels.providers.accepts import Accepts, TextRule
from models.core.egress import DestinationRefused, check_host, connect_socket, shown_text
from models.core.errors import InvalidInput

kind = "smtp"
honours_idempotency_key = False
accepts = Accepts(text=(TextRule(10_000),), media=None)  # a message's text; attachments are not sent

SECURITY_MODES = ("starttls", "ssl", "none")
MAX_CA_FILE_BYTES = 1024 * 1024


def security_of(config: dict) -> str:
    """The channel's ``security``: as set, else ``none`` on port 25 and ``starttls`` on any other."""
    return config.get("security") or ("none" if config.get("port") == 25 else "starttls")


def skips_tls_verification(config: dict) -> bool:
    """Whether the channel turned the certificate check off (``tls_verify = false``): the page warns."""
    return config.get("tls_verify") is False


def validate_config(config: dict) -> None:
    """Refuse settings this provider could not use, with :class:`InvalidInput` saying which and why."""
    if "host" in config:
        check_host(config["host"], field="host")
    port = config.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        raise InvalidInput(f"port is a whole number from 1 to 65535, not {port!r}.", field="settings")
    security = config.get("security")
    if security is not None and security not in SECURITY_MODES:
        raise InvalidInput(f"security is one of {', '.join(SECURITY_MODES)}, not {security!r}.", field="settings")
    verify = config.get("tls_verify")
    if "tls_verify" in config and not isinstance(verify, bool):
        raise InvalidInput(f"tls_verify is true or false (false turns the certificate check off), not {verify!r}.",
                           field="settings")
    ca_file = config.get("ca_file")
    if "ca_file" in config:
        _check_ca_file(ca_file)
    if verify is False and ca_file:
        raise InvalidInput("Set either ca_file (trust the relay's own CA) or tls_verify = false, not both.",
                           field="settings")
    if (ca_file or verify is False) and security_of(config) == "none":
        raise InvalidInput("ca_file and tls_verify are TLS settings, and this channel's security is none; "
                           "use security = starttls or ssl.", field="settings")


def _check_ca_file(path) -> None:
    if not isinstance(path, str) or not os.path.isabs(path):
        raise InvalidInput(f"ca_file is the absolute path of a PEM file of CA certificates, not {path!r}.",
                           field="settings")
    if not os.path.isfile(path):
        raise InvalidInput(f"ca_file: there is no file at {path} on this host.", field="settings")
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise InvalidInput(f"ca_file: {path} cannot be read ({exc.strerror or exc}).", field="settings") from None
    if size > MAX_CA_FILE_BYTES:  # a CA file is a few kilobytes; never read a huge one on a request
        raise InvalidInput(f"ca_file: {path} is larger than {MAX_CA_FILE_BYTES // 1024} KiB, too large for "
                           "a file of CA certificates.", field="settings")
    if size == 0:  # empty, or a kernel file (/proc) that only looks empty
        raise InvalidInput(f"ca_file: {path} holds no PEM certificate.", field="settings")
    try:
        ssl.create_default_context(cafile=path)
    except ssl.SSLError:
        raise InvalidInput(f"ca_file: {path} holds no PEM certificate.", field="settings") from None
    except OSError as exc:
        raise InvalidInput(f"ca_file: {path} cannot be read ({exc.strerror or exc}).", field="settings") from None


def tls_context(config: dict) -> ssl.SSLContext:
    """The TLS context the channel asks for; raises ``OSError`` (``ssl.SSLError``) if its ca_file cannot be loaded."""
    if skips_tls_verification(config):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    # With a cafile the default context trusts that file only, not the system's store.
    return ssl.create_default_context(cafile=config.get("ca_file") or None)


def _refusal(code: int, text, what: str) -> SendResult:
    words = shown_text(text, 200)
    message = f"the SMTP server refused {what} ({code} {words})"
    if 400 <= code < 500:
        return SendResult(SendOutcome.RETRY_LATER, message)
    return SendResult(SendOutcome.PERMANENT, message)


def build_message(delivery: Delivery, sender: str, to: str) -> EmailMessage:
    payload = delivery.payload
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = payload_text(payload, "subject") or ""
    message["Date"] = formatdate(delivery.publish_at.timestamp(), usegmt=True)
    domain = sender.rsplit("@", 1)[-1] if "@" in sender else "tickwork.invalid"
    message["Message-ID"] = f"<tickwork-action-{delivery.action_id}@{domain}>"
    for name, value in payload_headers(payload):
        message[name] = value
    message.set_content(payload_text(payload, "text", "body") or "")
    if payload_text(payload, "html"):
        message.add_alternative(payload["html"], subtype="html")
    return message


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Hand one message to the SMTP server, on a connection of its own."""
    session = open_session()
    try:
        return session.send(delivery, context)
    finally:
        session.close()


def open_session() -> "Session":
    """A connection to reuse for several messages of one channel (a dispatch lane's)."""
    return Session()


class _Broken(Exception):
    """The connection failed in ``phase``; the outcome table says what that means for the message."""

    def __init__(self, phase: str, cause: BaseException):
        super().__init__(phase)
        self.phase, self.cause = phase, cause


class Session:
    """One SMTP connection, opened on the first message and kept for the next ones of the same channel.

    Each message is its own transaction on the connection (MAIL, RCPT, DATA), so each ends
    in its own outcome. A connection that fails in any way is closed and the next message
    opens a new one. A reused connection found dead before DATA (the server dropped it
    while idle) sent nothing, so that message is tried once more on a fresh connection.
    """

    def __init__(self):
        self.server: smtplib.SMTP | None = None
        self.messages_on_connection = 0

    def send(self, delivery: Delivery, context: SendContext) -> SendResult:
        config, payload = delivery.config, delivery.payload
        host, sender = config.get("host"), payload_text(payload, "from") or config.get("from")
        to = payload_text(payload, "to") or delivery.target_key
        if not host or not sender:
            return SendResult(SendOutcome.NOT_SENT, "the smtp channel needs a host and a 'from' address")
        if not (payload_text(payload, "text", "body") or payload_text(payload, "html")):
            return SendResult(SendOutcome.NOT_SENT, "the payload has no 'text', 'body' or 'html' to send")
        try:
            message = build_message(delivery, sender, to)
        except BadHeaders as exc:
            return SendResult(SendOutcome.NOT_SENT, str(exc))
        except (ValueError, TypeError) as exc:
            return SendResult(SendOutcome.NOT_SENT, f"the message cannot be built: {exc}")
        reused = self.server is not None
        result = self._send_once(delivery, context, message, sender, to)
        if reused and result.outcome is SendOutcome.NOT_SENT and self.server is None:
            result = self._send_once(delivery, context, message, sender, to)
        return result

    def _send_once(self, delivery: Delivery, context: SendContext, message: EmailMessage, sender: str,
                   to: str) -> SendResult:
        config = delivery.config
        host = config.get("host")
        try:
            port = int(config.get("port", 587))
        except (TypeError, ValueError):
            return SendResult(SendOutcome.NOT_SENT, f"the smtp channel's port {config.get('port')!r} is not a number")
        security = security_of({**config, "port": port})
        if security not in SECURITY_MODES:  # saved before settings were checked: never fall back to plain text
            return SendResult(SendOutcome.PERMANENT, f"the smtp channel's security {security!r} is not one of "
                              f"{', '.join(SECURITY_MODES)}; nothing was sent")
        try:
            if self.server is None:
                refused = self._connect(delivery, context, host, port, security)
                if refused is not None:
                    self.close()
                    return refused
            result = self._transaction(message, sender, to)
        except _Broken as broken:
            self.close()
            return _broken_outcome(broken, host, port, context.timeout)
        if result.outcome is SendOutcome.SUCCESS:
            self.messages_on_connection += 1
        else:
            self.close()  # a refused transaction leaves the connection in a state not worth reasoning about
        return result

    def _connect(self, delivery: Delivery, context: SendContext, host: str, port: int, security: str) -> SendResult | None:
        """Connect, greet, STARTTLS and log in, all within one deadline; a result only when refused."""
        config = delivery.config
        try:
            tls = tls_context(config) if security != "none" else None
        except OSError as exc:
            # Not permanent: the file may be missing on this consumer's host only, and nothing was sent.
            return SendResult(SendOutcome.NOT_SENT, f"the channel's ca_file {config.get('ca_file')} cannot be loaded "
                              f"on this host ({getattr(exc, 'strerror', None) or exc}); nothing was sent")
        deadline = _Deadline(context.timeout)
        phase = "connect"
        try:
            if security == "ssl":
                server = _SslConnection(deadline, timeout=context.timeout, context=tls)
            else:
                server = _Connection(deadline, timeout=context.timeout)
            self.server = server  # kept before connecting, so a failed connect is closed by close()
            server._host = host  # what smtplib's own constructor sets: the name TLS checks the certificate against
            code, reply = server.connect(host, port)
            if code != 220:
                raise smtplib.SMTPConnectError(code, reply)
            deadline.bound(server)
            server.ehlo()
            if security == "starttls":
                if not server.has_extn("starttls"):
                    return SendResult(SendOutcome.PERMANENT, f"the SMTP server at {host}:{port} does not offer STARTTLS, "
                                      "so the message and the login would cross the network unencrypted; set security "
                                      "= ssl if it speaks TLS from the start, or security = none only on a network you trust")
                phase = "starttls"
                deadline.bound(server)
                server.starttls(context=tls)
                deadline.bound(server)
                server.ehlo()
            if config.get("username"):
                phase = "login"
                if not server.has_extn("auth"):
                    return SendResult(SendOutcome.PERMANENT, f"the SMTP server at {host}:{port} does not offer AUTH, so the "
                                      f"channel's username cannot log in (security '{security}'); use 'starttls' or 'ssl' "
                                      "if it offers AUTH only over TLS, or remove the username")
                deadline.bound(server)
                server.login(config["username"], delivery.secret or "")
            server.sock.settimeout(context.timeout)  # each message's commands get the whole timeout again
        except _CONNECTION_ERRORS as exc:
            raise _Broken(phase, exc) from exc
        self.messages_on_connection = 0
        return None

    def _transaction(self, message: EmailMessage, sender: str, to: str) -> SendResult:
        """MAIL, RCPT and DATA for one message on the open connection."""
        server = self.server
        phase = "envelope"
        try:
            code, text = server.mail(sender)
            if code != 250:
                return _refusal(code, text, f"the sender {sender}")
            code, text = server.rcpt(to)
            if code not in (250, 251):
                return _refusal(code, text, f"the recipient {to}")
            phase = "data"
            code, text = server.data(message.as_bytes())
            if code != 250:
                return _refusal(code, text, "the message")
        except _CONNECTION_ERRORS as exc:
            raise _Broken(phase, exc) from exc
        return SendResult.success(message["Message-ID"].strip("<>"), f"accepted: {shown_text(text, 280)}")

    def close(self) -> None:
        """Say QUIT if the connection still listens; close it either way."""
        server, self.server = self.server, None
        if server is None:
            return
        try:
            server.quit()
        except (smtplib.SMTPException, OSError):
            pass
        finally:
            server.close()  # whatever QUIT met (a passed deadline included), the socket is closed; twice is harmless


_CONNECTION_ERRORS = (smtplib.SMTPException, socket.timeout, TimeoutError, ConnectionError, OSError, DestinationRefused)
_PHASE_WORDS = {"connect": "connecting", "starttls": "starting TLS", "login": "logging in",
                "envelope": "announcing the message"}


def _words(text) -> str:
    return shown_text(text, 200)


def _broken_outcome(broken: _Broken, host: str, port: int, timeout: float) -> SendResult:
    """What a connection that failed in ``broken.phase`` means for the message on it."""
    exc, phase = broken.cause, broken.phase
    if isinstance(exc, DestinationRefused):
        return SendResult(SendOutcome.PERMANENT, f"{exc}; nothing was sent")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return SendResult(SendOutcome.PERMANENT, f"the SMTP server at {host}:{port} showed a certificate that cannot be "
                          f"trusted ({exc.verify_message or exc.reason}); set ca_file to the PEM file of the CA that "
                          "signed it (or, only on a network you trust, tls_verify = false)")
    if phase == "connect":
        # Closed, silent, HTTP, SSH or a refusing greeting: one answer, none of the far end's words.
        return SendResult(SendOutcome.NOT_SENT, f"could not reach the relay at {host}:{port}; nothing was sent, "
                          "so it will be tried again")
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        if 400 <= exc.smtp_code < 500:
            return SendResult(SendOutcome.RETRY_LATER, f"the SMTP server refused the login for now ({exc.smtp_code}): "
                              f"{_words(exc.smtp_error)}; it will be tried again")
        return SendResult(SendOutcome.PERMANENT, f"the SMTP server refused the login ({exc.smtp_code}): "
                          f"{_words(exc.smtp_error)}; check the channel's username and password")
    if isinstance(exc, smtplib.SMTPResponseException):
        if phase == "data" and exc.smtp_code >= 500:
            return _refusal(exc.smtp_code, exc.smtp_error, "the message")
        if phase == "data":
            return SendResult(SendOutcome.UNKNOWN, f"the SMTP server answered {exc.smtp_code} during DATA; the message may have been accepted")
        return _refusal(exc.smtp_code, exc.smtp_error, "the connection" if phase == "connect" else phase)
    if phase == "data":
        return SendResult(SendOutcome.UNKNOWN, "the SMTP connection broke while the message was being sent: "
                          f"{shown_text(str(exc), 200) or type(exc).__name__}")
    if _timed_out(exc):
        return SendResult(SendOutcome.NOT_SENT, f"the SMTP server at {host}:{port} did not answer within {timeout:g} s "
                          f"({_PHASE_WORDS.get(phase, phase)}); nothing was sent, so it will be tried again")
    return SendResult(SendOutcome.NOT_SENT, f"could not hand the message to {host}:{port} ({phase}): "
                      f"{shown_text(str(exc), 200) or type(exc).__name__}")


def _timed_out(exc: BaseException) -> bool:
    # smtplib reports a read that timed out as "Connection unexpectedly closed", raised from the timeout.
    return isinstance(exc, TimeoutError) or (isinstance(exc, smtplib.SMTPServerDisconnected)
                                             and isinstance(exc.__context__, TimeoutError))


class _Deadline:
    """One deadline for setting up a connection, however slowly the server trickles its answers."""

    def __init__(self, seconds: float):
        self.seconds, self.at = seconds, time.monotonic() + seconds

    def remaining(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no answer within {self.seconds:g} s")
        return left

    def bound(self, server: smtplib.SMTP) -> None:
        """Let the next command wait only for what is left of the deadline."""
        server.sock.settimeout(self.remaining())


class _Connection(smtplib.SMTP):
    """An SMTP connection whose connect and greeting wait only for what is left of ``deadline``."""

    def __init__(self, deadline: _Deadline, **options):
        self.deadline = deadline
        super().__init__(**options)

    def _get_socket(self, host, port, timeout):
        return _connected(host, port, self.deadline)


class _SslConnection(smtplib.SMTP_SSL):
    """As :class:`_Connection`, with TLS from the first byte (``security = ssl``)."""

    def __init__(self, deadline: _Deadline, **options):
        self.deadline = deadline
        super().__init__(**options)

    def _get_socket(self, host, port, timeout):
        return _bounded(self.context.wrap_socket(_connected(host, port, self.deadline), server_hostname=self._host),
                        self.deadline)


def _connected(host: str, port: int, deadline: _Deadline) -> socket.socket:
    """A socket connected through the egress policy's check, waiting only for what is left of ``deadline``."""
    return _bounded(connect_socket(host, port, deadline.remaining()), deadline)


def _bounded(sock: socket.socket, deadline: _Deadline) -> socket.socket:
    """``sock`` waiting only for what is left of ``deadline``; closed if it has passed.

    smtplib keeps the socket only once ``_get_socket`` returns: one that met a passed deadline on the
    way is closed here, not left to the garbage collector.
    """
    try:
        sock.settimeout(deadline.remaining())
    except TimeoutError:
        sock.close()
        raise
    return sock
