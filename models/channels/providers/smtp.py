"""``smtp``: email through an SMTP server.

Channel config: ``host``, ``port`` (default 587), ``from``, optional ``username`` and
``security`` (``starttls``, ``ssl`` or ``none``; default ``starttls`` unless the port is
25). Secret: the password. Payload: ``subject``, ``text`` or ``body``, optional ``html``,
optional ``to`` (else the target key), optional ``headers`` (extra headers by name, such as
``List-Unsubscribe``; see :func:`~models.channels.providers.base.payload_headers`).

Until the DATA command the server has accepted nothing, so a failure there means not
sent; once the message body is on the wire, a dropped connection or a timeout means the
outcome is unknown. The Message-ID is derived from the action id, so a recipient's mail
system can recognise a repeat. A refused login, or a server that offers no AUTH to a
channel with a username, fails for good: another attempt would meet the same settings.

A dispatch sends the messages of one channel in a chunk over one or two connections
(:func:`open_session`), each carrying its share: one login, then MAIL, RCPT and DATA per
message, each message with its own outcome. A connection that breaks mid-chunk decides only the message on it at the time
(not sent before DATA, unknown during it); the next message opens a new connection.
"""

import smtplib
import socket
import ssl
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

kind = "smtp"
honours_idempotency_key = False


def _refusal(code: int, text, what: str) -> SendResult:
    words = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
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
        port = int(config.get("port", 587))
        security = config.get("security", "none" if port == 25 else "starttls")
        try:
            if self.server is None:
                refused = self._connect(delivery, context, host, port, security)
                if refused is not None:
                    self.close()
                    return refused
            result = self._transaction(message, sender, to)
        except _Broken as broken:
            self.close()
            exc = broken.cause
            if isinstance(exc, smtplib.SMTPAuthenticationError):
                return SendResult(SendOutcome.PERMANENT, f"the SMTP server refused the login ({exc.smtp_code}); check the channel's username and password")
            if isinstance(exc, smtplib.SMTPResponseException):
                if broken.phase == "data" and exc.smtp_code >= 500:
                    return _refusal(exc.smtp_code, exc.smtp_error, "the message")
                if broken.phase == "data":
                    return SendResult(SendOutcome.UNKNOWN, f"the SMTP server answered {exc.smtp_code} during DATA; the message may have been accepted")
                return _refusal(exc.smtp_code, exc.smtp_error, "the connection" if broken.phase == "connect" else broken.phase)
            if broken.phase == "data":
                return SendResult(SendOutcome.UNKNOWN, f"the SMTP connection broke while the message was being sent: {exc or type(exc).__name__}")
            return SendResult(SendOutcome.NOT_SENT, f"could not hand the message to {host}:{port} ({broken.phase}): {exc or type(exc).__name__}")
        if result.outcome is SendOutcome.SUCCESS:
            self.messages_on_connection += 1
        else:
            self.close()  # a refused transaction leaves the connection in a state not worth reasoning about
        return result

    def _connect(self, delivery: Delivery, context: SendContext, host: str, port: int, security: str) -> SendResult | None:
        phase = "connect"
        try:
            if security == "ssl":
                self.server = smtplib.SMTP_SSL(host, port, timeout=context.timeout, context=ssl.create_default_context())
            else:
                self.server = smtplib.SMTP(host, port, timeout=context.timeout)
            server = self.server
            server.ehlo()
            if security == "starttls":
                server.starttls(context=ssl.create_default_context())
                server.ehlo()
            if delivery.config.get("username"):
                phase = "login"
                if not server.has_extn("auth"):
                    return SendResult(SendOutcome.PERMANENT, f"the SMTP server at {host}:{port} does not offer AUTH, so the "
                                      f"channel's username cannot log in (security '{security}'); use 'starttls' or 'ssl' "
                                      "if it offers AUTH only over TLS, or remove the username")
                server.login(delivery.config["username"], delivery.secret or "")
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
        reply = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
        return SendResult.success(message["Message-ID"].strip("<>"), f"accepted: {reply}"[:300])

    def close(self) -> None:
        """Say QUIT if the connection still listens; close it either way."""
        server, self.server = self.server, None
        if server is None:
            return
        try:
            server.quit()
        except (smtplib.SMTPException, OSError):
            server.close()


_CONNECTION_ERRORS = (smtplib.SMTPException, socket.timeout, TimeoutError, ConnectionError, OSError)
