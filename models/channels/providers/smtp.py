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
    """Hand one message to the SMTP server."""
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
    port = int(config.get("port", 587))
    security = config.get("security", "none" if port == 25 else "starttls")
    phase = "connect"
    try:
        if security == "ssl":
            server = smtplib.SMTP_SSL(host, port, timeout=context.timeout, context=ssl.create_default_context())
        else:
            server = smtplib.SMTP(host, port, timeout=context.timeout)
        with server:
            server.ehlo()
            if security == "starttls":
                server.starttls(context=ssl.create_default_context())
                server.ehlo()
            if config.get("username"):
                phase = "login"
                if not server.has_extn("auth"):
                    return SendResult(SendOutcome.PERMANENT, f"the SMTP server at {host}:{port} does not offer AUTH, so the "
                                      f"channel's username cannot log in (security '{security}'); use 'starttls' or 'ssl' "
                                      "if it offers AUTH only over TLS, or remove the username")
                server.login(config["username"], delivery.secret or "")
            phase = "envelope"
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
            reply = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
            return SendResult.success(message["Message-ID"].strip("<>"), f"accepted: {reply}"[:300])
    except smtplib.SMTPAuthenticationError as exc:
        return SendResult(SendOutcome.PERMANENT, f"the SMTP server refused the login ({exc.smtp_code}); check the channel's username and password")
    except smtplib.SMTPResponseException as exc:
        if phase == "data" and exc.smtp_code >= 500:
            return _refusal(exc.smtp_code, exc.smtp_error, "the message")
        if phase == "data":
            return SendResult(SendOutcome.UNKNOWN, f"the SMTP server answered {exc.smtp_code} during DATA; the message may have been accepted")
        return _refusal(exc.smtp_code, exc.smtp_error, "the connection" if phase == "connect" else phase)
    except (smtplib.SMTPServerDisconnected, socket.timeout, TimeoutError, ConnectionError, OSError, smtplib.SMTPException) as exc:
        if phase == "data":
            return SendResult(SendOutcome.UNKNOWN, f"the SMTP connection broke while the message was being sent: {exc or type(exc).__name__}")
        return SendResult(SendOutcome.NOT_SENT, f"could not hand the message to {host}:{port} ({phase}): {exc or type(exc).__name__}")
