"""The public routes, listed in one place: reachable without a session, a bearer token or a CSRF
token, each proving itself with a check of its own.

Everything else needs a signed-in member (the dashboard, with a CSRF token on every change)
or a bearer token (the API). The CSRF test and the access tests read this list: a route that
answers without either and is not listed here fails them. A wing that adds a public route
(an unsubscribe link, a provider's webhook, a calendar feed, a pipeline callback) adds a line
here, saying what checks it.
"""

from flask import Flask

from webapp.extensions import csrf

# endpoint -> what proves a request to it
PUBLIC_ROUTES: dict[str, str] = {
    "health.healthz": "nothing to prove: numbers about the clock, never a workspace's content",
    "health.metrics": "nothing to prove: numbers about the clock, never a workspace's content",
    "api_openapi.openapi": "nothing to prove: the API's description, never a workspace's content",
    "api_work_schedules.callback": "the X-Tickwork-Signature header: HMAC-SHA256 of the body with the work's own "
                                   "secret, for the run whose token is in the URL",
    "drip_public.unsubscribe_page": "a contact's unsubscribe token, signed for its workspace; shows a button, changes nothing",
    "drip_public.unsubscribe": "a contact's unsubscribe token, signed for its workspace (RFC 8058 one-click)",
    "drip_public.postmark_bounce": "an HMAC of the channel's id made with the postmark channel's secret, in the URL",
    "feeds.feed": "a person's calendar feed token in the URL, stored hashed, live only while they are a member; "
                  "a wrong or revoked one answers 404",
    "invitations.show": "an invitation's id signed with the app's secret, expiring with it; shows the invitation "
                        "and changes nothing (answering it needs the invited person signed in, with a CSRF token)",
    "drip_public.twilio_inbound": "X-Twilio-Signature: HMAC-SHA1 of the URL and parameters with the channel's auth token",
    "channels.oauth_callback": "the authorization's state: issued by a Connect, stored hashed, one use, ten minutes, "
                               "and only for the signed-in person who started it; the code is then exchanged with "
                               "its PKCE verifier. A wrong, reused or expired state answers 400 and changes nothing",
    "post_review_public.page": "a review link's token: 256 random bits, stored as its SHA-256, working only until it is "
                               "used for a decision, revoked, expired (7 days by default) or the post changes; shows "
                               "the post and changes nothing. An unknown token answers 404, a spent one 410",
    "post_review_public.decide": "the same review link's token; a decision uses it up and is refused while the browser "
                                 "holds the post's author's session; each use is recorded as outside:<name> with "
                                 "its time and address",
    "media.public_file": "a media link's token: one item's id and an expiry, signed with a key derived from the app's "
                         "secret; an altered or expired one answers 404",
}


def init_app(app: Flask) -> None:
    """Exempt the public routes from CSRF (they carry their own check) once every blueprint is registered."""
    for endpoint in PUBLIC_ROUTES:
        if endpoint not in app.view_functions:
            raise RuntimeError(f"public route {endpoint!r} is listed but no view has that endpoint")
        csrf.exempt(app.view_functions[endpoint])
