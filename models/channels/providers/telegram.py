"""``telegram``: a message from a bot to a chat through the Bot API, with its photos or video.

Channel config: ``chat_id`` (a chat's number, ``-100…`` for a channel or supergroup, or a
public channel's ``@name``), optional ``url`` (the Bot API server, default
``https://api.telegram.org``). Secret: the bot's token from @BotFather. Payload: ``text`` or
``body``, sent verbatim (no parse mode, so nothing in it is read as markup).

``POST {url}/bot{token}/<method>``: ``sendMessage`` for text alone; ``sendPhoto`` (one image),
``sendVideo`` or ``sendAnimation`` (a GIF) as multipart with the text as the ``caption``; for
2 to 10 items ``sendMediaGroup``, whose ``media`` is a JSON list naming the files as
``attach://file<n>``, the caption on the first. A caption is 1,024 characters against a
message's 4,096, so a post with media and a longer text is refused at save (``caption.characters``).
Telegram has no alt text: an item's alt is not sent. The provider id is ``<chat id>:<message id>``
(the first message of an album). The Bot API honours no idempotency key: an unknown
outcome fails for a person.
"""

import json
import re
from dataclasses import replace
from datetime import timedelta

import httpx

from models.channels.providers import http
from models.channels.providers.accepts import (GIF, GIF_MIME, JPEG, MP4, PNG, UPLOAD, VIDEO, WEBP, Accepts, ImageRule,
                                               MediaRules, TextRule, VideoRule)
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult, payload_text
from models.core.egress import check_url, shown_text
from models.core.errors import InvalidInput
from models.timing.backoff import MAX_RETRY_AFTER

kind = "telegram"
honours_idempotency_key = False
DEFAULT_URL = "https://api.telegram.org"
accepts = Accepts(
    text=(TextRule(4096),),
    media=MediaRules(max_items=10, delivery=UPLOAD, caption=TextRule(1024),
                     # A photo: at most 10 MB, sides adding up to 10,000 px, a ratio of at most 20.
                     image=ImageRule(formats=frozenset({JPEG, PNG, WEBP}), max_bytes=10 * 1000 * 1000,
                                     max_side=5000, aspect=(1 / 20, 20), may_prepare=True),
                     gif=ImageRule(formats=frozenset({GIF_MIME}), max_bytes=50 * 1000 * 1000),
                     video=VideoRule(formats=frozenset({MP4}), max_bytes=50 * 1000 * 1000)),
)
SINGLE = {VIDEO: ("sendVideo", "video"), GIF: ("sendAnimation", "animation")}


def validate_config(config: dict) -> None:
    """A chat to post to, and a Bot API server the egress policy allows."""
    chat = config.get("chat_id")
    if isinstance(chat, bool) or not (isinstance(chat, int) or (isinstance(chat, str) and chat.strip()
                                                                 and not any(c.isspace() for c in chat))):
        raise InvalidInput("A telegram channel needs the chat's id (chat_id = -1001234567890, or @channelname).",
                           field="settings")
    if "url" in config:
        check_url(config["url"], field="url")


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """One message, photo, video or album to the chat; its message id becomes the provider id."""
    config = delivery.config
    text = payload_text(delivery.payload, "text", "body")
    chat = config.get("chat_id")
    if chat in (None, "") or not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the telegram channel needs a chat_id and the bot's token")
    if not text and not delivery.media:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'text' or 'body' to send")
    base = f"{(config.get('url') or DEFAULT_URL).rstrip('/')}/bot{delivery.secret}"
    media = delivery.media
    if not media:
        response = http.post(context, f"{base}/sendMessage", json={"chat_id": chat, "text": text})
    elif len(media) == 1:
        method, field = SINGLE.get(media[0].kind, ("sendPhoto", "photo"))
        form = {"chat_id": str(chat), **({"caption": text} if text else {})}
        response = http.post(context, f"{base}/{method}", data=form,
                             files={field: (media[0].filename, media[0].data, media[0].mime)})
    else:
        album = [{"type": "video" if item.kind == VIDEO else "photo", "media": f"attach://file{n}"}
                 for n, item in enumerate(media)]
        if text:
            album[0]["caption"] = text
        files = {f"file{n}": (item.filename, item.data, item.mime) for n, item in enumerate(media)}
        response = http.post(context, f"{base}/sendMediaGroup", files=files,
                             data={"chat_id": str(chat), "media": json.dumps(album, ensure_ascii=False)})
    if isinstance(response, SendResult):
        return _without_token(response, delivery.secret)
    return outcome_of(response, chat)


def outcome_of(response: httpx.Response, chat) -> SendResult:
    """The Bot API's answer (``ok``, ``result``, or ``error_code``, ``description``, ``parameters``) as an outcome."""
    try:
        answer = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        answer = None
    if not isinstance(answer, dict):
        answer = {}
    status = response.status_code
    if 200 <= status < 300 and answer.get("ok") is True:
        result = answer.get("result")
        first = result[0] if isinstance(result, list) and result else result
        message_id = first.get("message_id") if isinstance(first, dict) else None
        return SendResult.success(f"{chat}:{message_id}")
    code = answer.get("error_code") if isinstance(answer.get("error_code"), int) else status
    said = shown_text(str(answer.get("description") or response.text or ""), 300)
    parameters = answer.get("parameters") if isinstance(answer.get("parameters"), dict) else {}
    if code == 429:
        wait = parameters.get("retry_after")
        retry_after = (min(timedelta(seconds=wait), MAX_RETRY_AFTER)
                       if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait >= 0 else None)
        return SendResult(SendOutcome.RETRY_LATER, f"Telegram is limiting this bot (429): {said}",
                          retry_after=retry_after)
    if code == 401:
        return SendResult(SendOutcome.PERMANENT, f"Telegram refused the bot's token (401): {said}; "
                                                 "reconnect the channel with the bot's current token",
                          reconnect_needed=True)
    if code == 403:
        return SendResult(SendOutcome.PERMANENT, f"Telegram will not let the bot post to chat {chat} (403): {said}; "
                                                 "add the bot to the chat again, with the right to post")
    if "migrate_to_chat_id" in parameters:
        return SendResult(SendOutcome.PERMANENT, f"Telegram says chat {chat} is now {parameters['migrate_to_chat_id']}"
                                                 f" ({code}): {said}; update the channel's chat_id")
    if code >= 500 or status >= 500:
        return SendResult(SendOutcome.UNKNOWN, f"Telegram answered {code}; it may or may not have sent it: {said}")
    return SendResult(SendOutcome.PERMANENT, f"Telegram refused the message ({code}): {said}")


def _without_token(result: SendResult, token: str) -> SendResult:
    """The token is part of every Bot API URL: never let it into a message an operator reads."""
    return replace(result, message=result.message.replace(token, "<token>"))


def post_url(config: dict, provider_id: str) -> str | None:
    """The message on t.me: ``/<name>/<id>`` for a public ``@name`` chat, ``/c/<id>/<id>`` for a ``-100…`` one;
    None for a private chat, whose messages have no address."""
    chat, _, message = provider_id.rpartition(":")
    if not (message.isascii() and message.isdecimal()):
        return None
    if chat.startswith("@") and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{3,31}", chat[1:]):
        return f"https://t.me/{chat[1:]}/{message}"
    if chat.startswith("-100") and chat[4:].isascii() and chat[4:].isdecimal():
        return f"https://t.me/c/{chat[4:]}/{message}"
    return None
