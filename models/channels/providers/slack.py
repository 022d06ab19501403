"""``slack``: a message through Slack's ``chat.postMessage``, its files shared into the message's thread.

Channel config: ``channel`` (the conversation's id, ``C0123456789``), optional
``unfurl_links`` (default true) and ``url`` (the Web API's base, default
``https://slack.com/api``). Secret: a bot token (``xoxb-…``) with ``chat:write`` and, for
media, ``files:write``. Payload: ``text`` or ``body``, sent verbatim.

Slack answers its errors as HTTP 200 with ``{"ok": false, "error": "..."}``; each documented
``error`` is mapped to an outcome below. Media follow Slack's external upload: for each file
``files.getUploadURLExternal`` (``filename``, ``length``, ``alt_txt`` = the item's alt text)
gives an ``upload_url`` and a ``file_id``, and the bytes are POSTed there; all of this comes
before the message, while the files are still private, so a failure there posts nothing.
Then ``chat.postMessage``, and ``files.completeUploadExternal`` shares the files into the
message's thread (``channel_id``, ``thread_ts`` = the message's ``ts``). The provider id is
``<channel>:<ts>``. Slack honours no idempotency key, so an unknown outcome fails for a person.
"""

import json
import re

import httpx

from models.channels.providers import http
from models.channels.providers.accepts import (GIF_MIME, JPEG, MP4, PNG, QUICKTIME, UPLOAD, WEBP, Accepts, ImageRule,
                                               MediaRules, TextRule, VideoRule)
from models.channels.providers.base import Delivery, MediaFile, SendContext, SendOutcome, SendResult, payload_text
from models.core.egress import check_url, shown_text
from models.core.errors import InvalidInput
from models.timing.backoff import parse_retry_after

kind = "slack"
honours_idempotency_key = False
DEFAULT_URL = "https://slack.com/api"
FILE_BYTES = 1024 * 1024 * 1024  # Slack's 1 GB per file
accepts = Accepts(
    text=(TextRule(40_000),),
    media=MediaRules(max_items=10, alt_max=1000, delivery=UPLOAD, video_alone=False,
                     image=ImageRule(formats=frozenset({JPEG, PNG, WEBP, GIF_MIME}), max_bytes=FILE_BYTES),
                     gif=ImageRule(formats=frozenset({GIF_MIME}), max_bytes=FILE_BYTES),
                     video=VideoRule(formats=frozenset({MP4, QUICKTIME, "video/webm"}), max_bytes=FILE_BYTES)),
)

# Slack's ``error`` values, by what they mean for the send.
# Any other error is permanent too, with Slack's word for it.
RECONNECT_ERRORS = {"invalid_auth", "not_authed", "token_revoked", "token_expired", "account_inactive"}
RETRY_ERRORS = {"ratelimited", "rate_limited"}
UNKNOWN_ERRORS = {"internal_error", "fatal_error", "service_unavailable", "request_timeout"}
_HINTS = {
    "channel_not_found": "check the channel's id (C0123…), and that the app can see it",
    "not_in_channel": "invite the app to the channel (/invite @app)",
    "is_archived": "the channel is archived",
    "msg_too_long": "the text is over Slack's limit",
    "no_text": "the message has no text",
    "missing_scope": "give the app the chat:write and files:write scopes and reinstall it",
}


def validate_config(config: dict) -> None:
    """A conversation id, and a Web API base the egress policy allows."""
    channel = config.get("channel")
    if not isinstance(channel, str) or not channel.strip() or any(c.isspace() for c in channel):
        raise InvalidInput("A slack channel needs the conversation's id, like C0123456789 (channel = ...).",
                           field="settings")
    if "url" in config:
        check_url(config["url"], field="url")


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Upload the files, post the message, then share the files into its thread."""
    config = delivery.config
    text = payload_text(delivery.payload, "text", "body")
    channel = config.get("channel")
    if not channel or not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the slack channel needs a conversation id and a bot token")
    if not text:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'text' or 'body' to post")
    base = (config.get("url") or DEFAULT_URL).rstrip("/")
    auth = {"Authorization": f"Bearer {delivery.secret}"}
    files = []
    for number, item in enumerate(delivery.media, 1):
        uploaded = _upload(base, auth, item, number, context)
        if isinstance(uploaded, SendResult):
            return uploaded
        files.append({"id": uploaded, "title": item.alt or item.filename})
    answer = _api(context, base, "chat.postMessage", auth, json={
        "channel": channel, "text": text, "unfurl_links": bool(config.get("unfurl_links", True))})
    if isinstance(answer, SendResult):
        return answer
    ts = answer.get("ts")
    provider_id = f"{answer.get('channel') or channel}:{ts}"
    if not files:
        return SendResult.success(provider_id)
    shared = _api(context, base, "files.completeUploadExternal", auth, json={
        "files": files, "channel_id": answer.get("channel") or channel, "thread_ts": ts})
    if isinstance(shared, SendResult):
        # The message is out and cannot be taken back by a retry without posting it twice.
        return SendResult.success(provider_id, f"posted; its files were not shared into the thread: {shared.message}")
    return SendResult.success(provider_id)


def _upload(base: str, auth: dict, item: MediaFile, number: int, context: SendContext) -> str | SendResult:
    """The file id of ``item`` once its bytes are with Slack (still private), or why the send stops."""
    form = {"filename": item.filename, "length": str(len(item.data))}
    if item.alt:
        form["alt_txt"] = item.alt
    answer = _api(context, base, "files.getUploadURLExternal", auth, data=form)
    if isinstance(answer, SendResult):
        return _before_the_message(answer)
    upload_url, file_id = answer.get("upload_url"), answer.get("file_id")
    if not isinstance(upload_url, str) or not isinstance(file_id, str):
        return SendResult(SendOutcome.NOT_SENT, "Slack gave no upload_url and file_id; nothing was posted")
    # The upload URL carries its own authorisation: the bot token stays with the Web API.
    response = http.post(context, upload_url, content=item.data, headers={"Content-Type": item.mime})
    if isinstance(response, SendResult):
        return _before_the_message(response)
    refused = http.classify(response, context, what=f"Slack's file upload (media item {number})")
    if refused is not None:
        return _before_the_message(refused)
    return file_id


def _before_the_message(result: SendResult) -> SendResult:
    """An upload's failure: the message was not posted, so an answer in doubt is a send that did not happen."""
    if result.outcome is SendOutcome.UNKNOWN:
        return SendResult(SendOutcome.NOT_SENT, f"{result.message}; nothing was posted")
    return result


def _api(context: SendContext, base: str, method: str, auth: dict, **body) -> dict | SendResult:
    """One Web API call's answer (``ok: true``), or its outcome."""
    headers = {**auth, "Content-Type": "application/json; charset=utf-8"} if "json" in body else auth
    response = http.post(context, f"{base}/{method}", headers=headers, **body)
    if isinstance(response, SendResult):
        return response
    if response.status_code == 429:
        return SendResult(SendOutcome.RETRY_LATER, f"Slack is rate limiting {method} (429){http.error_detail(response)}",
                          retry_after=parse_retry_after(response.headers.get("Retry-After"), context.now))
    refused = http.classify(response, context, what=f"Slack ({method})")
    if refused is not None:
        return refused
    try:
        answer = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        answer = None
    if not isinstance(answer, dict):
        return SendResult(SendOutcome.UNKNOWN, f"Slack answered {method} with something other than JSON")
    if answer.get("ok") is True:
        return answer
    return _error_outcome(response, method, answer, context)


def _error_outcome(response: httpx.Response, method: str, answer: dict, context: SendContext) -> SendResult:
    error = str(answer.get("error") or "unknown_error")
    said = f"Slack refused {method}: {shown_text(error, 80)}"
    if error in _HINTS:
        said += f" ({_HINTS[error]})"
    if error in RECONNECT_ERRORS:
        return SendResult(SendOutcome.PERMANENT, f"{said}; reconnect the channel with a new bot token",
                          reconnect_needed=True)
    if error in RETRY_ERRORS:
        return SendResult(SendOutcome.RETRY_LATER, said,
                          retry_after=parse_retry_after(response.headers.get("Retry-After"), context.now))
    if error in UNKNOWN_ERRORS:
        return SendResult(SendOutcome.UNKNOWN, f"{said}; it may or may not have acted on it")
    return SendResult(SendOutcome.PERMANENT, said)


_SLACK_CHANNEL = re.compile(r"[CGD][A-Z0-9]{2,30}")
_SLACK_TS = re.compile(r"([0-9]{1,12})\.([0-9]{6})")


def post_url(config: dict, provider_id: str) -> str | None:
    """The message's permalink, ``https://slack.com/archives/<channel>/p<ts without its dot>`` (provider id ``<channel>:<ts>``)."""
    channel, _, ts = provider_id.partition(":")
    found = _SLACK_TS.fullmatch(ts)
    if not _SLACK_CHANNEL.fullmatch(channel) or not found:
        return None
    return f"https://slack.com/archives/{channel}/p{found[1]}{found[2]}"
