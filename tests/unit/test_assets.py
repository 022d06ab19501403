"""``tickwork assets``: the pinned static files from an npm registry's tarball, checked by sha512, without npm.

The registry is a loopback fake serving a tarball built here, laid out as npm packs one.
"""

import datetime
import io
import ipaddress
import socket
import ssl
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from pytest_httpserver import HTTPServer

from webapp import assets
from webapp.command_line import cli

SCRIPT = b"var htmx = (() => ({version: '9.9.9'}))();\n"
PINS = """
[[asset]]
name = "htmx"
package = "htmx.org"
version = "9.9.9"
member = "package/dist/htmx.min.js"
path = "vendor/htmx-9.9.9.min.js"
sha512 = "{sha512}"
"""


def npm_tarball(files: dict[str, bytes]) -> bytes:
    """A gzipped tar as ``npm pack`` writes one: every file under ``package/``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


TARBALL = npm_tarball({"package/package.json": b'{"name": "htmx.org", "version": "9.9.9"}',
                       "package/dist/htmx.min.js": SCRIPT})


@pytest.fixture
def pinned_here(tmp_path, monkeypatch):
    """The CLI pointed at a pin list and a static folder of this test's own; returns the static folder."""
    pins = tmp_path / "assets.toml"
    pins.write_text(PINS.format(sha512=assets.integrity(SCRIPT)))
    static = tmp_path / "static"
    monkeypatch.setattr(assets, "ASSETS_FILE", pins)
    monkeypatch.setattr(assets, "STATIC_DIR", static)
    return static


def run(*args):
    return CliRunner().invoke(cli, ["assets", *args])


def refused(result, fragment):
    assert result.exit_code == 1, result.output
    assert fragment in result.output and "Traceback" not in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def serve(httpserver: HTTPServer, body: bytes, status: int = 200):
    httpserver.expect_request("/htmx.org/-/htmx.org-9.9.9.tgz").respond_with_data(
        body, status=status, content_type="application/octet-stream")


def test_an_asset_is_fetched_from_its_tarball_checked_and_put_in_place_once(pinned_here, httpserver):
    serve(httpserver, TARBALL)
    done = run("--registry", httpserver.url_for("/").rstrip("/"))
    assert done.exit_code == 0, done.output
    assert (pinned_here / "vendor" / "htmx-9.9.9.min.js").read_bytes() == SCRIPT
    assert "fetched and checked" in done.output and len(httpserver.log) == 1
    again = run("--registry", httpserver.url_for("/"))
    assert "already in place" in again.output and len(httpserver.log) == 1, "nothing fetched twice"
    assert assets.problems(pinned_here) == []


def test_a_file_whose_sha512_differs_from_its_pin_is_refused_and_nothing_is_written(pinned_here, httpserver):
    serve(httpserver, npm_tarball({"package/dist/htmx.min.js": SCRIPT.replace(b"9.9.9", b"6.6.6")}))
    refused(run("--registry", httpserver.url_for("/")), "does not match its pinned sha512: refused, nothing written")
    assert not pinned_here.exists()


def test_a_registry_that_is_down_or_lacks_the_release_is_one_clear_line(pinned_here, httpserver):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    refused(run("--registry", f"http://127.0.0.1:{closed}"), f"cannot reach the npm registry at http://127.0.0.1:{closed}")
    serve(httpserver, b"Not Found", status=404)
    refused(run("--registry", httpserver.url_for("/")), "answered 404: no htmx.org 9.9.9 there")
    httpserver.clear()
    serve(httpserver, b"<html>an error page, not a tarball</html>")
    refused(run("--registry", httpserver.url_for("/")), "is not a readable npm tarball")
    httpserver.clear()
    serve(httpserver, npm_tarball({"package/README.md": b"no dist"}))
    refused(run("--registry", httpserver.url_for("/")), "holds no package/dist/htmx.min.js")
    assert not pinned_here.exists()


def test_the_registry_chosen_is_reached_but_a_redirect_to_an_internal_address_is_refused(pinned_here, httpserver,
                                                                                          egress_allow):
    """Nothing internal is allowed but the registry named on the command line: its redirect to another
    loopback address (just as reachable) is refused at the connection, and nothing is written."""
    egress_allow("")
    inside = HTTPServer(host="127.0.0.2", port=0)
    inside.start()
    try:
        serve(inside, TARBALL)
        httpserver.expect_request("/htmx.org/-/htmx.org-9.9.9.tgz").respond_with_data(
            "", status=302, headers={"Location": inside.url_for("/htmx.org/-/htmx.org-9.9.9.tgz")})
        refused(run("--registry", httpserver.url_for("/").rstrip("/")),
                "destination not allowed: 127.0.0.2 is a loopback address")
        assert inside.log == [] and not pinned_here.exists()
        httpserver.clear()
        serve(httpserver, TARBALL)
        done = run("--registry", httpserver.url_for("/").rstrip("/"))
        assert done.exit_code == 0, done.output
    finally:
        inside.clear()
        inside.stop()


@pytest.mark.parametrize("registry", ["http://registry.example.com", "ftp://127.0.0.1/", "registry.npmjs.org"])
def test_a_registry_reached_in_the_clear_over_the_network_is_refused_before_any_request(pinned_here, registry):
    refused(run("--registry", registry), "is not an https:// URL")


def test_the_default_path_is_https_and_trusts_what_the_system_trusts(pinned_here, tmp_path, monkeypatch):
    """A loopback registry over TLS, with a certificate from a CA this test makes and hands over as SSL_CERT_FILE."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tickwork test registry")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(hours=1))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False)
                   .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "registry.pem", tmp_path / "registry.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server = HTTPServer(host="127.0.0.1", port=0, ssl_context=context)
    server.start()
    try:
        serve(server, TARBALL)
        registry = f"https://127.0.0.1:{server.port}"
        refused(run("--registry", registry), "cannot reach the npm registry")  # an unknown CA is not trusted
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        done = run("--registry", registry)
        assert done.exit_code == 0, done.output
        assert (pinned_here / "vendor" / "htmx-9.9.9.min.js").read_bytes() == SCRIPT
    finally:
        server.clear()
        server.stop()


def test_the_pinned_list_names_each_file_its_place_and_its_sha512():
    [htmx] = assets.pinned()
    assert (htmx.name, htmx.package, htmx.member) == ("htmx", "htmx.org", "package/dist/htmx.min.js")
    assert htmx.path == f"vendor/htmx-{htmx.version}.min.js"
    assert htmx.sha512.startswith("sha512-") and len(htmx.sha512) == len("sha512-") + 88
    assert htmx.tarball_url("https://registry.npmjs.org/") == \
        f"https://registry.npmjs.org/htmx.org/-/htmx.org-{htmx.version}.tgz"
    scoped = assets.Asset("x", "@scope/widget", "1.2.3", "package/x.js", "vendor/x.js", "sha512-")
    assert scoped.tarball_url("https://npm.example") == "https://npm.example/@scope/widget/-/widget-1.2.3.tgz"
    base = (Path(assets.__file__).parent / "templates" / "base.html").read_text()
    assert "assets.htmx.path" in base and "assets.htmx.sha512" in base, "pages load htmx as pinned, with its hash"


def test_a_wheel_build_is_refused_while_an_asset_is_missing(pinned_here):
    with pytest.raises(SystemExit, match="refusing to build a wheel without its static assets: htmx 9.9.9 is missing"):
        assets.check_for_wheel(pinned_here)


def test_the_default_registry_is_allowed_by_name_even_where_it_resolves_to_a_reserved_address(
        pinned_here, httpserver, egress_allow, monkeypatch):
    """A build machine's mirror may answer for registry.npmjs.org from a reserved range; the fetch
    trusts the registry's name (every file is checked by sha512), and nothing else."""
    egress_allow("")  # no exception for loopback: only the registry's own name lets this through
    default = f"http://localhost:{httpserver.port}"
    monkeypatch.setattr(assets, "DEFAULT_REGISTRY", default)
    serve(httpserver, TARBALL)
    assert "fetched and checked" in assets.fetch_assets(pinned_here, registry=default)[0]
    assert (pinned_here / "vendor" / "htmx-9.9.9.min.js").read_bytes() == SCRIPT
