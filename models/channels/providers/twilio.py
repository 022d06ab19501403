"""``twilio``: SMS through Twilio's Messages API.

``POST {url}/2010-04-01/Accounts/{account_sid}/Messages.json`` with HTTP basic auth
(account SID, auth token) and a form body ``To``, ``From`` (or ``MessagingServiceSid``),
``Body``. Channel config: ``account_sid``, ``from`` or ``messaging_service_sid``, optional
``url`` (default ``https://api.twilio.com``). Secret: the auth token. Payload: ``body``,
optional ``to`` (else the target key).
"""

from models.channels.providers import http
from models.channels.providers.accepts import Accepts, TextRule
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult, payload_text

kind = "twilio"
honours_idempotency_key = False
accepts = Accepts(text=(TextRule(1600),), media=None)  # an SMS: Twilio's 1,600 characters, no media
DEFAULT_URL = "https://api.twilio.com"


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Send one SMS; Twilio's message SID becomes the provider id."""
    config, payload = delivery.config, delivery.payload
    account = config.get("account_sid")
    body = payload_text(payload, "body", "text")
    if not account or not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the twilio channel needs an account_sid and an auth token")
    if not body:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'body' to send")
    form = {"To": payload_text(payload, "to") or delivery.target_key, "Body": body}
    if config.get("messaging_service_sid"):
        form["MessagingServiceSid"] = config["messaging_service_sid"]
    elif config.get("from"):
        form["From"] = config["from"]
    else:
        return SendResult(SendOutcome.NOT_SENT, "the twilio channel needs 'from' or 'messaging_service_sid'")
    url = f"{config.get('url', DEFAULT_URL).rstrip('/')}/2010-04-01/Accounts/{account}/Messages.json"
    response = http.post(context, url, data=form, auth=(account, delivery.secret))
    if isinstance(response, SendResult):
        return response
    refused = http.classify(response, context, what="Twilio")
    if refused is not None:
        return refused
    return SendResult.success(http.json_field(response, "sid"))
