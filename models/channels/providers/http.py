"""The HTTP half every HTTP provider shares: one pooled client, one request, its response class mapped to an outcome.

Every client here is the egress policy's (:mod:`models.core.egress`): each connection is
checked on the address it goes to, environment proxies are ignored, redirects are not
followed. A refused destination is a permanent failure, "destination not allowed", and a
redirect to one says so too; a far end's words are shown only through
:func:`~models.core.egress.shown_text`.
"""

import json
import os
import threading
from collections import OrderedDict

import httpx

from models.core.egress import NOT_ALLOWED, DestinationRefused, egress_client, shown_text, url_refusal
from models.timing.backoff import parse_retry_after
from models.channels.providers.base import SendContext, SendOutcome, SendResult

RETRY_LATER_STATUSES = {429, 503}
UNKNOWN_STATUSES = {500, 502, 504}
_MAX_DETAIL = 300


_http_clients: dict[int, httpx.Client] = {}
_channel_clients: "OrderedDict[tuple[int, int], httpx.Client]" = OrderedDict()
_http_lock = threading.Lock()
# Clients kept per process, one per channel that sent lately; the least recently used is closed beyond this.
MAX_CHANNEL_CLIENTS = 256


def http_client() -> httpx.Client:
    """One HTTP client per process for sends outside a dispatch (a channel's test send)."""
    with _http_lock:
        client = _http_clients.get(os.getpid())
        if client is None:
            client = _http_clients[os.getpid()] = _new_client(32)
        return client


def channel_client(channel_id: int, connections: int) -> httpx.Client:
    """The channel's own pooled client in this process: its connections stay open between sends
    (keep-alive per channel), and one busy channel never takes another's connections.
    ``connections`` bounds how many it opens at once. Timeouts are per request."""
    key = (os.getpid(), channel_id)
    with _http_lock:
        client = _channel_clients.get(key)
        if client is None:
            client = _channel_clients[key] = _new_client(connections)
            while len(_channel_clients) > MAX_CHANNEL_CLIENTS:
                _, evicted = _channel_clients.popitem(last=False)
                evicted.close()  # its requests in flight, if any, still finish on their open connections
        else:
            _channel_clients.move_to_end(key)
        return client


def _new_client(connections: int) -> httpx.Client:
    return egress_client(follow_redirects=False, limits=httpx.Limits(
        max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=30))


def post(context: SendContext, url: str, **request) -> httpx.Response | SendResult:
    """POST, or the outcome of a request that produced no response.

    A connection that never opened (refused, DNS, connect timeout) sent nothing; one that
    broke or timed out after the request went out may have been acted on.
    """
    return call(context, "POST", url, **request)


def get(context: SendContext, url: str, **request) -> httpx.Response | SendResult:
    """GET (a lookup, such as "did my earlier send land?"), or the outcome of a request that produced no response."""
    return call(context, "GET", url, **request)


def call(context: SendContext, method: str, url: str, **request) -> httpx.Response | SendResult:
    """Any method (a GET that polls, a PUT of an upload's bytes), answered as :func:`post` answers."""
    client = context.http
    try:
        return _request(client, method, url, context.timeout, request)
    except DestinationRefused as refused:
        return SendResult(SendOutcome.PERMANENT, f"{refused}; nothing was sent")
    except (httpx.UnsupportedProtocol, httpx.InvalidURL):
        # Not an http(s) URL, or one no connection can be made from: another attempt would meet the same URL.
        return SendResult(SendOutcome.PERMANENT, f"{NOT_ALLOWED}: {url_refusal(url) or 'the URL is not valid'}; "
                          "nothing was sent")
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
        return SendResult(SendOutcome.NOT_SENT, f"could not reach {_host(url)}: {_reason(exc)}")
    except (httpx.ReadTimeout, httpx.WriteTimeout) as exc:
        return SendResult(SendOutcome.UNKNOWN, f"{_host(url)} did not answer within {context.timeout:g}s after the request was sent ({type(exc).__name__})")
    except httpx.TransportError as exc:
        return SendResult(SendOutcome.UNKNOWN, f"the connection to {_host(url)} broke during the request: {_reason(exc)}")


# What a request may carry for :func:`_request` to send it straight to the client's transport.
_PLAIN = frozenset({"content", "data", "files", "json", "params", "headers"})


def _request(client, method: str, url: str, timeout: float, request: dict) -> httpx.Response:
    """``client.request(...)``, the response read and closed, for a plain request straight to its transport.

    A request the providers make is always built alike (the client's headers under its own, its
    timeout, no redirect followed), and httpx's ``Client.send`` around the transport (auth and
    redirect flows, a cookie jar read and written through ``http.cookiejar`` at every request)
    was half the CPU a webhook costs the consumer. So a plain request on a plain egress client
    (no auth, mounts, base URL, hooks or cookies) is built as ``build_request`` builds it and
    handed to the same transport, the egress policy's; no cookie a far end sets is kept for the
    next row's request (rows are independent). Anything else goes through ``client.request``.
    """
    if not (type(client) is httpx.Client and request.keys() <= _PLAIN and _plain(client)):
        return client.request(method, url, timeout=timeout, **request)
    headers = client.headers.copy()
    if request.get("headers"):
        headers.update(request["headers"])
    built = httpx.Request(method, url, headers=headers, extensions={"timeout": httpx.Timeout(timeout).as_dict()},
                          **{key: value for key, value in request.items() if key != "headers"})
    response = client._transport.handle_request(built)
    response.request = built
    try:
        response.read()
    finally:
        response.close()
    return response


def _plain(client: httpx.Client) -> bool:
    """Whether ``client`` adds nothing of its own to a request but headers and a timeout."""
    hooks = client.event_hooks
    return (client.auth is None and not client._mounts and not client.cookies and not client.params
            and not client.base_url.raw_path.strip(b"/") and not client.base_url.host
            and not hooks["request"] and not hooks["response"])


def classify(response: httpx.Response, context: SendContext, *, what: str) -> SendResult | None:
    """The outcome of a non-2xx response, or None for a 2xx (the caller reads its id)."""
    status = response.status_code
    if 200 <= status < 300:
        return None
    detail = error_detail(response)
    if status in RETRY_LATER_STATUSES:
        return SendResult(SendOutcome.RETRY_LATER, f"{what} answered {status}, try later{detail}",
                          retry_after=parse_retry_after(response.headers.get("Retry-After"), context.now))
    if status in UNKNOWN_STATUSES or status >= 500:
        return SendResult(SendOutcome.UNKNOWN, f"{what} answered {status}; it may or may not have acted on it{detail}")
    if status in (401, 403):
        return SendResult(SendOutcome.PERMANENT, f"{what} refused the credentials ({status}); check the channel's secret{detail}")
    if 300 <= status < 400:
        location = response.headers.get("Location", "")
        try:
            refused = url_refusal(str(response.url.join(location))) if location else None
        except httpx.InvalidURL:
            refused = "the URL is not valid"
        if refused is not None:
            return SendResult(SendOutcome.PERMANENT, f"{what} redirected ({status}) to a {NOT_ALLOWED} ({refused}); "
                              "the redirect was not followed")
        return SendResult(SendOutcome.PERMANENT, f"{what} redirected ({status}) to {shown_text(location, 200) or '?'}; "
                          "update the channel's URL")
    return SendResult(SendOutcome.PERMANENT, f"{what} refused the request ({status}){detail}")


def error_detail(response: httpx.Response) -> str:
    """The provider's own words about an error, shortened, as ': ...' (or '')."""
    text = ""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict):
        for key in ("message", "Message", "error_description", "error", "detail"):
            if isinstance(body.get(key), str) and body[key]:
                text = body[key]
                break
        code = body.get("code", body.get("ErrorCode"))
        if text and code not in (None, 0, ""):
            text = f"{text} (code {code})"
    if not text:
        text = response.text.strip()
    text = shown_text(text, _MAX_DETAIL)
    return f": {text}" if text else ""


def json_field(response: httpx.Response, key: str) -> str | None:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if isinstance(body, dict) and body.get(key) not in (None, ""):
        return str(body[key])
    return None


def _host(url: str) -> str:
    try:
        return httpx.URL(url).host or url
    except httpx.InvalidURL:
        return url


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
