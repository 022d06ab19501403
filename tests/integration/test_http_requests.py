"""The providers' one request path (models.channels.providers.http) against a real loopback server."""

from datetime import datetime, timezone

import httpx

from models.channels.providers import http
from models.channels.providers.base import SendContext


def _context(client) -> SendContext:
    return SendContext(now=datetime(2026, 1, 1, tzinfo=timezone.utc), timeout=5, http=client)


def test_a_plain_request_carries_the_clients_headers_under_its_own_and_keeps_no_cookie(httpserver):
    """Rows are independent: a cookie one far end sets is never sent with the next row's request."""
    httpserver.expect_ordered_request("/hook", method="POST").respond_with_data(
        '{"id": "first"}', headers={"Set-Cookie": "session=abc; Path=/"}, content_type="application/json")
    httpserver.expect_ordered_request("/hook", method="POST").respond_with_data('{"id": "second"}',
                                                                                content_type="application/json")
    client = http._new_client(4)
    try:
        answers = [http.post(_context(client), httpserver.url_for("/hook"), content=b'{"n": 1}',
                             headers={"User-Agent": "Tickwork", "Idempotency-Key": "7"}) for _ in range(2)]
    finally:
        client.close()
    assert [http.json_field(answer, "id") for answer in answers] == ["first", "second"]
    assert answers[0].url == httpserver.url_for("/hook")  # the response knows its request
    first, second = (request for request, _ in httpserver.log)
    assert first.headers["User-Agent"] == "Tickwork" and first.headers["Idempotency-Key"] == "7"
    assert first.headers["Accept"] == "*/*"  # the client's own header, under the request's
    assert first.get_data() == b'{"n": 1}'
    assert "Cookie" not in second.headers


def test_a_request_with_credentials_goes_through_the_client(httpserver):
    httpserver.expect_request("/form", method="POST").respond_with_data("ok")
    client = http._new_client(4)
    try:
        answer = http.post(_context(client), httpserver.url_for("/form"), data={"To": "+15550100"}, auth=("AC1", "s3"))
    finally:
        client.close()
    assert isinstance(answer, httpx.Response) and answer.text == "ok"
    request, _ = httpserver.log[0]
    assert request.headers["Authorization"].startswith("Basic ")
    assert request.form["To"] == "+15550100"
