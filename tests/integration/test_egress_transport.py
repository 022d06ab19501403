"""The egress transport against real loopback servers: the check on the address actually connected
to, on every connection; TLS keeping the host name; environment proxies ignored; redirects; SMTP's socket.

The suite's allow list opens loopback. These tests narrow it to ``127.0.0.1/32`` and keep a second
server on ``127.0.0.2``, which is just as reachable: a refusal there is the policy's, not the network's.
"""

import asyncio
import datetime
import ipaddress
import socket
import ssl

import httpx
import pytest
from pytest_httpserver import HTTPServer

from models.core import egress


@pytest.fixture
def inside():
    """A server on 127.0.0.2: reachable on this machine, outside the allow list the tests set."""
    server = HTTPServer(host="127.0.0.2", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


def test_an_allowed_address_is_reached_and_a_refused_one_never_connected_to(httpserver, inside, egress_allow):
    egress_allow("127.0.0.1/32")
    httpserver.expect_request("/ok").respond_with_data("fine")
    inside.expect_request("/secret").respond_with_data("internal")
    with egress.egress_client(timeout=5) as client:
        assert client.get(httpserver.url_for("/ok")).text == "fine"
        with pytest.raises(egress.DestinationRefused, match="127.0.0.2 is a loopback address") as refused:
            client.get(inside.url_for("/secret"))
    assert isinstance(refused.value, httpx.TransportError)  # any code handling httpx errors handles it
    assert inside.log == []


def test_every_connection_is_checked_on_the_address_it_connects_to(httpserver, inside, egress_allow, monkeypatch):
    """A name that resolves to an allowed address, then to an internal one (DNS rebinding), is
    refused on the second connection; and each socket goes to the very address that was checked."""
    egress_allow("127.0.0.1/32")
    httpserver.expect_request("/").respond_with_data("outside")
    inside.expect_request("/").respond_with_data("inside")
    real = socket.getaddrinfo
    answers = iter(["127.0.0.1", "127.0.0.2"])

    def rebinding(host, port, *args, **kwargs):
        if host == "rebind.test":  # the OS resolver, answering a new address each time it is asked
            return real(next(answers, "127.0.0.2"), port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with egress.egress_client(timeout=5, headers={"Connection": "close"}) as client:
        assert client.get(f"http://rebind.test:{httpserver.port}/").text == "outside"
        with pytest.raises(egress.DestinationRefused, match="rebind.test resolves to a loopback address"):
            client.get(f"http://rebind.test:{inside.port}/")
    assert inside.log == []


def _certificate_for_localhost(tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(hours=1))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
                   .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "localhost.pem", tmp_path / "localhost.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def test_tls_checks_the_host_name_while_connecting_to_the_checked_address(tmp_path, egress_allow):
    """The certificate names ``localhost`` only: the connection goes to 127.0.0.1, the handshake
    sends and verifies the name (by the address, the same certificate would be refused)."""
    egress_allow("127.0.0.1/32")
    cert_file, key_file = _certificate_for_localhost(tmp_path)
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert_file, key_file)
    seen_names = []
    served.sni_callback = lambda sock, name, context: seen_names.append(name)
    server = HTTPServer(host="127.0.0.1", port=0, ssl_context=served)
    server.expect_request("/").respond_with_data("tls ok")
    server.start()
    try:
        trusted = ssl.create_default_context(cafile=str(cert_file))
        with egress.egress_client(verify=trusted, timeout=5) as client:
            assert client.get(f"https://localhost:{server.port}/").text == "tls ok"
            with pytest.raises(httpx.ConnectError, match="certificate verify failed"):
                client.get(f"https://127.0.0.1:{server.port}/")
    finally:
        server.clear()
        server.stop()
    assert seen_names[0] == "localhost"


def test_proxies_from_the_environment_are_never_used(httpserver, monkeypatch):
    """A proxy in the environment would see every request (and could reach anything): it sees none."""
    from models.channels.providers.http import channel_client

    proxy = HTTPServer(host="127.0.0.1", port=0)
    proxy.expect_request("").respond_with_data("via the proxy")
    proxy.start()
    try:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        httpserver.expect_request("/direct", method="POST").respond_with_data("direct")
        fresh = channel_client(10**9 + 7, 2)  # a channel's pooled client, built with the proxies set
        with egress.egress_client(timeout=5) as client:
            assert client.post(httpserver.url_for("/direct")).text == "direct"
        assert fresh.post(httpserver.url_for("/direct"), timeout=5).text == "direct"
    finally:
        proxy.clear()
        proxy.stop()
    assert proxy.log == []
    assert len(httpserver.log) == 2


def test_a_redirect_to_a_refused_address_is_not_followed(httpserver, inside, egress_allow):
    egress_allow("127.0.0.1/32")
    httpserver.expect_request("/moved").respond_with_data("", status=302,
                                                         headers={"Location": inside.url_for("/secret")})
    inside.expect_request("/secret").respond_with_data("internal")
    with egress.egress_client(timeout=5, follow_redirects=True) as client:
        with pytest.raises(egress.DestinationRefused, match="127.0.0.2 is a loopback address"):
            client.get(httpserver.url_for("/moved"))
    assert inside.log == []


def test_the_async_client_and_a_bare_transport_keep_the_same_policy(httpserver, inside, egress_allow):
    egress_allow("127.0.0.1/32")
    httpserver.expect_request("/ok").respond_with_data("async fine")
    inside.expect_request("/").respond_with_data("internal")

    async def both():
        async with egress.async_egress_client(timeout=5) as client:
            ok = (await client.get(httpserver.url_for("/ok"))).text
            with pytest.raises(egress.DestinationRefused):
                await client.get(inside.url_for("/"))
            return ok

    assert asyncio.run(both()) == "async fine"
    # What an OAuth client library is given: the transport, with trust_env off.
    with httpx.Client(transport=egress.egress_transport(), trust_env=False, timeout=5) as client:
        with pytest.raises(egress.DestinationRefused):
            client.get(inside.url_for("/"))
    assert inside.log == []


def test_an_egress_client_takes_no_proxy_or_transport_of_its_own():
    for option in ("proxy", "mounts", "transport", "trust_env"):
        with pytest.raises(TypeError, match="an egress client takes no"):
            egress.egress_client(**{option: None})


def test_a_socket_connects_only_to_a_checked_address(egress_allow):
    listening = socket.create_server(("127.0.0.2", 0))
    try:
        port = listening.getsockname()[1]
        egress_allow("127.0.0.1/32")
        with pytest.raises(egress.DestinationRefused, match="127.0.0.2 is a loopback address"):
            egress.connect_socket("127.0.0.2", port, 2)
        egress_allow("127.0.0.2/32")
        with egress.connect_socket("127.0.0.2", port, 2) as sock:
            assert ipaddress.ip_address(sock.getpeername()[0]) == ipaddress.ip_address("127.0.0.2")
    finally:
        listening.close()


class _KeepAliveServer:
    """A loopback HTTP/1.1 server that keeps connections open and counts them; with ``hang_up`` it
    closes each one silently once it has answered, as a far end whose idle timeout ran out does."""

    def __init__(self, hang_up: bool = False):
        import socketserver
        import threading

        self.connections = 0
        self.requests = 0
        lock = threading.Lock()
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                with lock:
                    owner.connections += 1
                while True:
                    line = self.rfile.readline()
                    if not line:
                        return
                    length = 0
                    while (header := self.rfile.readline()) not in (b"\r\n", b""):
                        if header.lower().startswith(b"content-length:"):
                            length = int(header.split(b":", 1)[1])
                    self.rfile.read(length)
                    with lock:
                        owner.requests += 1
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    self.wfile.flush()
                    if hang_up:
                        return

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def test_the_pool_reuses_its_connections_and_opens_no_more_than_its_bound():
    from concurrent.futures import ThreadPoolExecutor

    server = _KeepAliveServer()
    try:
        with egress.egress_client(timeout=5, limits=httpx.Limits(max_connections=2, max_keepalive_connections=2)) as client:
            with ThreadPoolExecutor(6) as threads:
                answers = list(threads.map(lambda _: client.post(server.url, content=b"{}").text, range(24)))
    finally:
        server.stop()
    assert answers == ["ok"] * 24
    assert server.requests == 24
    assert 1 <= server.connections <= 2


def test_a_connection_the_far_end_closed_while_idle_is_never_reused():
    import time

    server = _KeepAliveServer(hang_up=True)
    try:
        with egress.egress_client(timeout=5) as client:
            first = client.post(server.url, content=b"{}").text
            time.sleep(0.2)  # the far end has closed the idle connection by now
            second = client.post(server.url, content=b"{}").text
    finally:
        server.stop()
    assert (first, second) == ("ok", "ok")
    assert server.connections == 2
