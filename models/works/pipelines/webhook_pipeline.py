"""``webhook``: the built-in pipeline that hands the generation to an outside system.

It POSTs the work, the run's token and its chosen providers to the work's ``url``, signed
like the webhook channel: ``X-Tickwork-Signature: sha256=<hex HMAC-SHA256 of the body with the
work's secret>``, ``Idempotency-Key: <run token>``. The receiver answers 2xx at once (202 is
the polite answer) and later POSTs the result, signed with the same secret, to
``callback_url`` (``TICKWORK_BASE_URL/api/works/runs/<token>/callback``)::

    {"status": "generated"}            or    {"status": "error", "error": "why"}

No callback within the pipeline timeout is a failed run. Any other answer to the POST (a
4xx or 5xx, a timeout, a refused connection) fails the run at once with the receiver's words
(trimmed, without control characters). The POST goes through the egress policy
(:mod:`models.core.egress`): a ``url`` it refuses is refused when the work is saved (422 on
``settings.url``) and again at every run ("destination not allowed", as is a redirect to
one; redirects are never followed).
The pipeline needs ``TICKWORK_BASE_URL`` (the callback must be reachable): a work or schedule
that would use it refuses to activate without it.
"""

import hashlib
import hmac
import json
import re

import httpx

from models.core.egress import NOT_ALLOWED, DestinationRefused, check_url, egress_client, shown_text, url_refusal
from models.works.pipelines import Generation, PipelineResult

PLUGIN_ID = "webhook"
DESCRIPTION = "POSTs each generation to a URL, signed, and waits for the signed result at its callback URL"
capability = "pipeline"
SIGNATURE_HEADER = "X-Tickwork-Signature"
_WEB_URL = re.compile(r"^https?://[^\s/]+\S*$")
# The POST itself is short: the receiver answers at once and works afterwards.
POST_TIMEOUT_SECONDS = 30


class BaseUrlMissing(ValueError):
    """The webhook pipeline needs TICKWORK_BASE_URL for its callback."""


def check_settings(settings: dict, base_url: str | None) -> dict:
    """``url`` an http(s) URL; and the app must know its public address for the callback."""
    unknown = sorted(set(settings) - {"url"})
    if unknown:
        raise ValueError(f"settings.{unknown[0]}: the webhook pipeline takes only url")
    url = settings.get("url")
    if not isinstance(url, str) or not _WEB_URL.match(url.strip()) or len(url) > 2000:
        raise ValueError("settings.url: the webhook pipeline needs an http(s) url")
    check_url(url.strip(), field="settings.url")  # InvalidInput (422, destination_not_allowed) when refused
    if not base_url:
        raise BaseUrlMissing("the webhook pipeline needs TICKWORK_BASE_URL (the public address its callback "
                             "is sent to); set it and try again")
    return {"url": url.strip()}


def signature(secret: str, body: bytes) -> str:
    """The value of the signature header for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def body_bytes(generation: Generation) -> bytes:
    return json.dumps({
        "work": {"id": generation.work_id, "name": generation.work_name},
        "run": {"id": generation.run_id, "token": generation.token, "kind": generation.run_kind,
                "slot": generation.slot.strftime("%Y-%m-%dT%H:%M:%SZ") if generation.slot else None},
        "providers": generation.providers,
        "callback_url": generation.callback_url,
    }, separators=(",", ":"), ensure_ascii=False).encode()


def run(generation: Generation) -> PipelineResult:
    """POST the generation; a 2xx means the receiver took it and will call back."""
    if not generation.callback_url or not generation.secret:
        return PipelineResult.failed("the webhook pipeline has no callback URL or secret (is TICKWORK_BASE_URL set?)")
    body = body_bytes(generation)
    headers = {"Content-Type": "application/json", "Idempotency-Key": generation.token, "User-Agent": "Tickwork",
               SIGNATURE_HEADER: signature(generation.secret, body)}
    timeout = min(POST_TIMEOUT_SECONDS, generation.timeout.total_seconds())
    url = generation.settings["url"]
    try:
        with egress_client(timeout=timeout, follow_redirects=False) as client:
            response = client.post(url, content=body, headers=headers)
    except DestinationRefused as refused:
        return PipelineResult.failed(f"{refused}; nothing was sent")
    except (httpx.UnsupportedProtocol, httpx.InvalidURL):
        return PipelineResult.failed(f"{NOT_ALLOWED}: {url_refusal(url) or 'the URL is not valid'}; nothing was sent")
    except httpx.TimeoutException:
        return PipelineResult.failed(f"the webhook receiver did not answer within {timeout:g} s")
    except httpx.HTTPError as exc:
        return PipelineResult.failed(f"the webhook receiver could not be reached: {type(exc).__name__}: "
                                     f"{shown_text(str(exc), 200)}")
    status = response.status_code
    if 200 <= status < 300:
        return PipelineResult.waiting()
    if 300 <= status < 400:
        return PipelineResult.failed(_redirected(response))
    return PipelineResult.failed(f"the webhook receiver answered {status}: {shown_text(response.text, 300)}")


def _redirected(response: httpx.Response) -> str:
    """A redirect is never followed: say where it pointed, or that it pointed somewhere not allowed."""
    location = response.headers.get("Location", "")
    try:
        refused = url_refusal(str(response.url.join(location))) if location else None
    except httpx.InvalidURL:
        refused = "the URL is not valid"
    if refused is not None:
        return (f"the webhook receiver redirected ({response.status_code}) to a {NOT_ALLOWED} ({refused}); "
                "the redirect was not followed")
    return (f"the webhook receiver redirected ({response.status_code}) to {shown_text(location, 200) or '?'}; "
            "redirects are not followed: update the work's url")
