"""What Threads, Facebook and Instagram share: Meta's Graph API, its error object mapped to outcomes, containers polled.

Every call carries the channel's access token as ``Authorization: Bearer`` (never in the URL,
where logs would keep it). A refusal comes as the Graph error object
``{"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}``, mapped by its code
(Meta's "Handling Errors" guide and each product's publishing errors):

| code | meaning | outcome |
|---|---|---|
| 190, 102 | the access token expired, was revoked or is invalid | permanent, reconnect needed |
| 4, 9, 17, 32, 341, 613, 80001–80014, or HTTP 429 | throttled (app, user, Page, publishing limit) | retry later, after ``estimated_time_to_regain_access`` when ``X-Business-Use-Case-Usage`` or ``X-App-Usage`` says it |
| 1, 2, or HTTP 5xx | a transient fault on Meta's side | unknown when it answered the publishing call; not sent when it answered a step before it (a container, an unpublished photo: nothing is public yet) |
| 9007 with subcode 2207027 | Instagram: the media is not ready for publishing | not sent |
| 100, 368, 506, 3, 10, 200–299, anything else | invalid parameter, blocked for a policy, duplicate post, permissions | permanent, with Meta's words |

Creating a container is never a post: an unpublished container expires after 24 hours and is
seen by nobody, so a failure up to the publishing call is "not sent" and the next attempt
makes a new container. Only the publishing call can leave a post in doubt.
"""

import json
import time
from dataclasses import dataclass, field, replace
from datetime import timedelta

import httpx

from models.core.egress import DestinationRefused, shown_text
from models.core.errors import InvalidInput
from models.timing.backoff import parse_retry_after
from models.channels.providers import http
from models.channels.providers.base import SendContext, SendOutcome, SendResult

TOKEN_CODES = frozenset({190, 102})
THROTTLING_CODES = frozenset({4, 9, 17, 32, 341, 613, *range(80001, 80015)})
TRANSIENT_CODES = frozenset({1, 2})
# Instagram's "the media is not ready for publishing" (code 9007, subcode 2207027): nothing was published.
NOT_READY = frozenset({(9007, 2207027)})
USAGE_HEADERS = ("X-Business-Use-Case-Usage", "X-App-Usage")
# Waits between two looks at a container's status: short first (an image is usually ready at
# once), longer after (a video takes a while); the whole send stays within the context's timeout.
POLL_WAITS = (1.0, 2.0, 4.0, 8.0)
# The least time worth giving one more request.
MIN_REQUEST = 1.0
# The share of the send's time polls leave for the publishing call (at most PUBLISH_RESERVE_MAX
# seconds): a publish given a second would time out into "outcome unknown" when it merely was slow.
PUBLISH_RESERVE_SHARE = 1 / 3
PUBLISH_RESERVE_MAX = 10.0


@dataclass
class Budget:
    """What is left of a send's ``context.timeout``: the real time spent, or the waits asked of the sleeper when
    they are more (a test's sleeper returns at once; a real one's waits are in the real time already)."""

    timeout: float
    started: float = field(default_factory=time.monotonic)
    slept: float = 0.0

    def left(self) -> float:
        return self.timeout - max(time.monotonic() - self.started, self.slept)

    @property
    def publish_reserve(self) -> float:
        return min(self.timeout * PUBLISH_RESERVE_SHARE, PUBLISH_RESERVE_MAX)

    def context_for_one_request(self, context: SendContext) -> SendContext:
        return replace(context, timeout=max(MIN_REQUEST, min(context.timeout, self.left())))

    def sleep(self, context: SendContext, seconds: float) -> None:
        context.sleep(seconds)
        self.slept += seconds


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def base_url(config: dict, default: str) -> str:
    return str(config.get("url") or default).rstrip("/")


def node_id(config: dict, key: str, default: str | None = None) -> str | None:
    """An id from the channel's settings (a whole number, or ``me`` where the network takes it)."""
    value = config.get(key, default)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return str(value)
    if isinstance(value, str) and (value.strip().isdecimal() or value.strip() == "me"):
        return value.strip()
    return None


def check_node_id(config: dict, key: str) -> None:
    """Refuse a setting ``key`` that is there and is no Graph id."""
    if key in config and node_id(config, key) is None:
        raise InvalidInput(f"{key} is the account's numeric id (or me); not {str(config[key])[:40]!r}.",
                           field="settings", code="bad_setting")


def graph_error(response: httpx.Response) -> dict:
    """The Graph error object of a refusal (empty when the body is not one)."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _code(error: dict, key: str) -> int | None:
    value = error.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdecimal():
        return int(value)
    return None


def _words(network: str, what: str, response: httpx.Response, error: dict) -> str:
    message = shown_text(str(error.get("message") or error.get("error_user_msg") or response.text.strip()), 300)
    parts = [f"code {error['code']}" if error.get("code") is not None else None,
             f"subcode {error['error_subcode']}" if error.get("error_subcode") is not None else None,
             f"fbtrace_id {shown_text(str(error['fbtrace_id']), 40)}" if error.get("fbtrace_id") else None]
    detail = ", ".join(part for part in parts if part)
    return (f"{network} refused {what} ({response.status_code})" + (f": {message}" if message else "")
            + (f" ({detail})" if detail else ""))


def regain_access_after(response: httpx.Response) -> float | None:
    """Seconds until Meta lets the app or account call again, from the usage headers' ``estimated_time_to_regain_access``
    (minutes), the longest any of them says; None when none says."""
    longest = None
    for name in USAGE_HEADERS:
        raw = response.headers.get(name)
        if not raw:
            continue
        try:
            usage = json.loads(raw)
        except json.JSONDecodeError:
            continue
        entries = [usage] if isinstance(usage, dict) and "estimated_time_to_regain_access" in usage else [
            entry for group in (usage.values() if isinstance(usage, dict) else [])
            for entry in (group if isinstance(group, list) else []) if isinstance(entry, dict)]
        for entry in entries:
            minutes = entry.get("estimated_time_to_regain_access")
            if isinstance(minutes, (int, float)) and not isinstance(minutes, bool) and minutes > 0:
                longest = max(longest or 0.0, float(minutes) * 60)
    return longest


def refusal(response: httpx.Response, context: SendContext, *, network: str, what: str,
            publishing: bool) -> SendResult | None:
    """The outcome of a non-2xx Graph answer (None for a 2xx). ``publishing``: the call that makes the post public."""
    status = response.status_code
    if 200 <= status < 300:
        return None
    error = graph_error(response)
    code = _code(error, "code")
    words = _words(network, what, response, error)
    if code in TOKEN_CODES:
        return SendResult(SendOutcome.PERMANENT, f"{words}; reconnect the {network} channel", reconnect_needed=True)
    if code in THROTTLING_CODES or status == 429:
        seconds = regain_access_after(response)
        wait = timedelta(seconds=seconds) if seconds else parse_retry_after(response.headers.get("Retry-After"),
                                                                               context.now)
        return SendResult(SendOutcome.RETRY_LATER, f"{words}; try later", retry_after=wait)
    if (code, _code(error, "error_subcode")) in NOT_READY:
        return SendResult(SendOutcome.NOT_SENT, f"{words}; nothing was published")
    if code in TRANSIENT_CODES or (status >= 500 and code is None) or (status >= 500 and not error):
        if publishing:
            return SendResult(SendOutcome.UNKNOWN, f"{words}; it may or may not have published the post")
        return SendResult(SendOutcome.NOT_SENT, f"{words}; nothing was published yet")
    if 300 <= status < 400:
        return http.classify(response, context, what=network)  # a redirect: the channel's url needs fixing
    return SendResult(SendOutcome.PERMANENT, words)


def _not_yet_public(result: SendResult) -> SendResult:
    """A step before the publishing call that may have reached Meta: still nothing public, so not sent."""
    if result.outcome is SendOutcome.UNKNOWN:
        return SendResult(SendOutcome.NOT_SENT, f"{result.message}; nothing was published yet (an unpublished "
                                                "container expires on its own)")
    return result


def call(context: SendContext, budget: Budget, method: str, url: str, token: str, *, network: str, what: str,
         publishing: bool, **request) -> dict | SendResult:
    """One Graph request: its JSON object, or the outcome that ends the send."""
    one = budget.context_for_one_request(context)
    if method == "POST":
        response = http.post(one, url, headers=bearer(token), **request)
    else:
        response = _get(one, url, headers=bearer(token), **request)
    if isinstance(response, SendResult):
        return response if publishing else _not_yet_public(response)
    refused = refusal(response, context, network=network, what=what, publishing=publishing)
    if refused is not None:
        return refused
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if not isinstance(body, dict):
        outcome = SendOutcome.UNKNOWN if publishing else SendOutcome.NOT_SENT
        return SendResult(outcome, f"{network} answered {what} with {response.status_code} and no JSON object")
    return body


def _get(context: SendContext, url: str, **request) -> httpx.Response | SendResult:
    """GET, or the outcome of a request that produced no response: a read changes nothing, so nothing was sent."""
    try:
        return context.http.get(url, timeout=context.timeout, **request)
    except DestinationRefused as refused:
        return SendResult(SendOutcome.PERMANENT, f"{refused}; nothing was sent")
    except (httpx.UnsupportedProtocol, httpx.InvalidURL):
        return SendResult(SendOutcome.PERMANENT, f"the channel's url is not valid ({shown_text(url, 120)}); "
                                                 "nothing was sent")
    except httpx.TransportError as exc:
        return SendResult(SendOutcome.NOT_SENT, f"could not read from {httpx.URL(url).host}: "
                                                f"{str(exc) or type(exc).__name__}")


def created_id(body: dict, network: str, what: str, *, publishing: bool) -> str | SendResult:
    """The ``id`` a create or publish call answered."""
    value = body.get("id")
    if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
        return str(value)
    outcome = SendOutcome.UNKNOWN if publishing else SendOutcome.NOT_SENT
    return SendResult(outcome, f"{network} answered {what} without an id")


def wait_until_finished(context: SendContext, budget: Budget, base: str, container_id: str, token: str, *,
                        network: str, status_field: str, error_field: str | None = None) -> SendResult | None:
    """Look at a container's ``status_field`` until it is ``FINISHED`` (None), waiting with ``context.sleep``
    and leaving the publishing call its share of the send's time.

    ``ERROR`` is permanent (Meta could not fetch or process the media: another attempt fetches the
    same file); ``EXPIRED`` is not sent; still ``IN_PROGRESS`` when the send's time is spent is not
    sent either: the container was never published, and the next attempt makes a new one.
    """
    fields = status_field if error_field is None else f"{status_field},{error_field}"
    waits = iter(POLL_WAITS)
    wait = next(waits)
    while True:
        body = call(context, budget, "GET", f"{base}/{container_id}", token, params={"fields": fields},
                    network=network, what="the container's status", publishing=False)
        if isinstance(body, SendResult):
            return body
        status = str(body.get(status_field) or "")
        if status == "FINISHED":
            return None
        if status == "ERROR":
            why = body.get(error_field) if error_field else body.get("status")
            return SendResult(SendOutcome.PERMANENT, f"{network} could not prepare the post's media (container "
                                                     f"{container_id}: ERROR" + (f", {shown_text(str(why), 200)}"
                                                                                 if why else "") + ")")
        if status == "EXPIRED":
            return SendResult(SendOutcome.NOT_SENT, f"{network}'s container {container_id} expired before it was "
                                                    "published; nothing was published")
        if status == "PUBLISHED":
            return SendResult(SendOutcome.UNKNOWN, f"{network}'s container {container_id} is already published, "
                                                   "though Tickwork did not publish it; check the account")
        if budget.left() < wait + MIN_REQUEST + budget.publish_reserve:
            return SendResult(SendOutcome.NOT_SENT, f"{network} was still processing container {container_id} "
                                                    f"({status or 'no status'}) after {budget.timeout:g}s; nothing "
                                                    "was published, and the next attempt makes a new container")
        budget.sleep(context, wait)
        wait = next(waits, POLL_WAITS[-1])


def comment(context: SendContext, budget: Budget, base: str, token: str, post_id, message: str, *, network: str,
            media=()) -> SendResult:
    """``POST /{post-id}/comments`` with ``message``: a comment under a published post (Facebook, Instagram)."""
    if not isinstance(post_id, str) or not post_id.replace("_", "").isdecimal():
        return SendResult(SendOutcome.PERMANENT, f"the comment names no {network} post to go under; nothing was sent")
    if media:
        return SendResult(SendOutcome.PERMANENT, f"a {network} first comment carries text only; nothing was sent")
    if not message.strip():
        return SendResult(SendOutcome.NOT_SENT, "the comment has no text")
    body = call(context, budget, "POST", f"{base}/{post_id}/comments", token, data={"message": message},
                network=network, what="the comment", publishing=True)
    if isinstance(body, SendResult):
        return body
    made = created_id(body, network, "the comment", publishing=True)
    return made if isinstance(made, SendResult) else SendResult.success(made, "commented")


@dataclass(frozen=True)
class TwoSteps:
    """How a network that posts in two steps (a container, then its publication) names them: Threads, Instagram."""

    network: str
    container_path: str  # under the user: "threads", "media"
    publish_path: str  # "threads_publish", "media_publish"
    text_field: str  # "text", "caption"
    status_field: str  # "status", "status_code"
    error_field: str  # where an ERROR container says why


def publish_in_two_steps(context: SendContext, steps: TwoSteps, *, base: str, user: str, token: str, media: list,
                         item_form, text: str | None, lone_form: dict | None = None,
                         extra: dict | None = None) -> SendResult:
    """Make the post's container (one item's, or a carousel of item containers), wait until it is ready, publish it.

    ``item_form(item, carousel=...)`` is an item's container form (or the refusal of an item that
    cannot be posted); ``lone_form`` is the container of a post without media (Threads' ``TEXT``); ``extra``
    goes on the post's own container (Threads' ``reply_to_id``).
    A video item is processed before the carousel may name it.
    """
    budget = Budget(context.timeout)

    def create(form: dict, what: str) -> str | SendResult:
        body = call(context, budget, "POST", f"{base}/{user}/{steps.container_path}", token, data=form,
                    network=steps.network, what=what, publishing=False)
        return body if isinstance(body, SendResult) else created_id(body, steps.network, what, publishing=False)

    def ready(container: str) -> SendResult | None:
        return wait_until_finished(context, budget, base, container, token, network=steps.network,
                                   status_field=steps.status_field, error_field=steps.error_field)

    if len(media) <= 1:
        form = dict(lone_form or {}) if not media else item_form(media[0], carousel=False)
        if isinstance(form, SendResult):
            return form
        what = "the post's container"
    else:
        children = []
        for number, item in enumerate(media, 1):
            child_form = item_form(item, carousel=True)
            if isinstance(child_form, SendResult):
                return child_form
            child = create(child_form, f"carousel item {number}'s container")
            if isinstance(child, SendResult):
                return child
            if item.kind == "video":
                waited = ready(child)
                if waited is not None:
                    return waited
            children.append(child)
        form = {"media_type": "CAROUSEL", "children": ",".join(children)}
        what = "the carousel's container"
    if text:
        form[steps.text_field] = text
    form.update(extra or {})
    container = create(form, what)
    if isinstance(container, SendResult):
        return container
    waited = ready(container)
    if waited is not None:
        return waited
    body = call(context, budget, "POST", f"{base}/{user}/{steps.publish_path}", token, data={"creation_id": container},
                network=steps.network, what="the publishing call", publishing=True)
    if isinstance(body, SendResult):
        return body
    published = created_id(body, steps.network, "the publishing call", publishing=True)
    return published if isinstance(published, SendResult) else SendResult.success(published)


# -- connecting: the code's short-lived token traded for a long-lived one ----------------------
#
# Meta answers an authorization code with a short-lived token (an hour for Threads and Instagram, one
# or two for Facebook). Kept as it is, the channel would need reconnecting by the end of the day, and
# Threads' and Instagram's refresh endpoints take only long-lived tokens. So the Connect trades it at
# once (``finish_connect``, called by :func:`models.channels.connections.exchange_code`):
#
# | network | exchange | kept |
# |---|---|---|
# | Threads | ``GET graph.threads.net/access_token?grant_type=th_exchange_token&client_secret&access_token`` | the 60-day user token, renewed with ``th_refresh_token`` |
# | Instagram | ``GET graph.instagram.com/access_token?grant_type=ig_exchange_token&client_secret&access_token`` | the 60-day user token, renewed with ``ig_refresh_token`` |
# | Facebook | ``GET graph.facebook.com/oauth/access_token?grant_type=fb_exchange_token&client_id&client_secret&fb_exchange_token`` | the Page's own token read with it (``GET /{page-id}?fields=access_token``): it does not expire |


def _connect_failed(message: str):
    from models.channels.providers.oauth import ConnectionFailed

    return ConnectionFailed(message)


def _graph_answer(response: httpx.Response, *, network: str, what: str) -> dict:
    """The JSON object a 2xx Graph answer carries; a refusal raises ConnectionFailed with Meta's words."""
    if not response.is_success:
        raise _connect_failed(_words(network, what, response, graph_error(response)) + ".")
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if not isinstance(body, dict):
        raise _connect_failed(f"{network} answered {what} with something that is not a Graph object.")
    return body


def code_token(answer: dict) -> dict:
    """The code's token answer, flat: Threads and Facebook answer ``{access_token, user_id}``, Instagram (with
    Instagram Login) ``{"data": [{access_token, user_id, permissions}]}``."""
    data = answer.get("data")
    if not answer.get("access_token") and isinstance(data, list) and data and isinstance(data[0], dict):
        return {**{k: v for k, v in answer.items() if k != "data"}, **data[0]}
    return dict(answer)


def long_lived_token(answer: dict, *, http: httpx.Client, url: str, params: dict, network: str,
                     token_param: str = "access_token") -> dict:
    """Trade the code's short-lived token (``answer``) at ``url`` for a long-lived one, the short one sent as
    ``token_param``; the user id is kept beside it."""
    short = code_token(answer)
    if not isinstance(short.get("access_token"), str) or not short["access_token"]:
        raise _connect_failed(f"{network}'s token answer carried no access token.")
    body = _graph_answer(http.get(url, params={**params, token_param: short["access_token"]}),
                         network=network, what="the long-lived token exchange")
    if not isinstance(body.get("access_token"), str) or not body["access_token"]:
        raise _connect_failed(f"{network}'s long-lived token exchange carried no access token.")
    kept = {key: short[key] for key in ("user_id", "permissions") if key in short}
    return {**kept, **body}


def page_token(user_token: str, page: str | None, *, http: httpx.Client, base: str, network: str) -> dict:
    """The Page's own access token, read with the person's long-lived user token: ``GET /{page-id}?fields=access_token``
    for the channel's ``page_id``; without one, the Pages the person manages (``/me/accounts``) are named."""
    headers = bearer(user_token)
    if page is None or page == "me":
        body = _graph_answer(http.get(f"{base}/me/accounts", params={"fields": "id,name"}, headers=headers),
                             network=network, what="the list of your Pages")
        pages = [entry for entry in body.get("data") or [] if isinstance(entry, dict)]
        named = ", ".join(f"{shown_text(str(p.get('name') or '?'), 60)} ({shown_text(str(p.get('id')), 30)})"
                          for p in pages[:10]) or "none"
        raise _connect_failed("Set the channel's page_id to the Page it posts to, then connect again "
                              f"(the account manages: {named}).")
    body = _graph_answer(http.get(f"{base}/{page}", params={"fields": "id,name,access_token"}, headers=headers),
                         network=network, what=f"Page {page}'s token")
    token = body.get("access_token")
    if not isinstance(token, str) or not token:
        raise _connect_failed(f"{network} gave no token for Page {page}: the account that connected does not manage "
                              "it, or did not grant pages_manage_posts. Connect with an account that manages the Page.")
    return {"access_token": token, "token_type": "bearer", "page_id": str(body.get("id") or page),
            "name": body.get("name")}
