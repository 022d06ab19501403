"""Real Chromium against a real server: the app served from a thread, on a migrated SQLite file.

Browser tests run on SQLite only: what they prove (htmx wiring, escaping, layout) does not
depend on the database, and the database tests already run on both.

Screenshots go to a temporary folder, or to ``TICKWORK_SCREENS_DIR`` when it is set
(``TICKWORK_SCREENS_DIR=docs/screens`` refreshes the ones the README shows).
"""

import base64
import hashlib
import io
import os
import tarfile
import threading
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect
from werkzeug.serving import make_server

from models.timing.clock import FrozenClock
from tests.conftest import ROOT, T0, TEST_SECRET, make_world, migrate

# A page's answer waits behind the other workers' tests on a two-core box: an assertion that the
# page shows something waits up to 15 s for it, not Playwright's 5 s, and still fails if it never comes.
expect.set_options(timeout=15_000)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
PASSWORD = "correct horse battery"

# axe-core, the accessibility engine, pinned: fetched from the npm registry's tarball, checked
# against the registry's sha512 before use, cached under .cache/. It is injected only into the
# contexts that audit (they bypass the page's CSP); it is never served by Tickwork.
AXE_VERSION = "4.14.1"
AXE_TARBALL = f"https://registry.npmjs.org/axe-core/-/axe-core-{AXE_VERSION}.tgz"
AXE_SHA512 = "FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="


@pytest.fixture(scope="session")
def live(tmp_path_factory):
    """A migrated SQLite database, the app on it, and a server on a free local port."""
    if not os.path.exists(CHROMIUM):
        pytest.fail("Chromium is not installed at /usr/bin/chromium: scripts/test.sh installs it")
    from webapp import create_app

    path = tmp_path_factory.mktemp("browser") / "tickwork.db"
    url = f"sqlite:///{path}"
    migrate(url)
    clock = FrozenClock(T0)
    app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": TEST_SECRET,
                      "TICKWORK_QUEUE_URL": "immediate", "TICKWORK_CLOCK": clock, "TICKWORK_POLICY": {},
                      "TICKWORK_MEDIA_DIR": str(path.parent / "media")})
    world = make_world(app)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield type("Live", (), {"app": app, "world": world, "clock": clock,
                            "url": f"http://127.0.0.1:{server.server_port}"})
    server.shutdown()
    thread.join(timeout=5)
    from models.core.database import db

    with app.app_context():
        db.engine.dispose()


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def _checked(tarball: bytes) -> bytes:
    digest = base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    if digest != AXE_SHA512:
        pytest.fail(f"axe-core {AXE_VERSION}: the tarball's sha512 is {digest}, not the pinned {AXE_SHA512}")
    return tarball


@pytest.fixture(scope="session")
def axe_source() -> str:
    """The pinned axe-core's ``axe.min.js``, its tarball verified by sha512."""
    cached = ROOT / ".cache" / f"axe-core-{AXE_VERSION}.tgz"
    if not cached.exists():
        with urllib.request.urlopen(AXE_TARBALL, timeout=60) as answer:
            tarball = _checked(answer.read())
        cached.parent.mkdir(exist_ok=True)
        cached.write_bytes(tarball)
    tarball = _checked(cached.read_bytes())
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        return archive.extractfile("package/axe.min.js").read().decode()


@pytest.fixture(scope="session")
def screens(tmp_path_factory) -> Path:
    chosen = os.environ.get("TICKWORK_SCREENS_DIR")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screens")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def open_as(live, chromium):
    """``open_as("ops")``: a fresh browser context signed in as that role; returns its page."""
    contexts = []

    def sign_in(role: str, *, viewport=None, bypass_csp: bool = False, **options):
        """``bypass_csp`` is for the accessibility audit only, which injects axe-core into the page."""
        context = chromium.new_context(viewport=viewport or {"width": 1280, "height": 860}, base_url=live.url,
                                       bypass_csp=bypass_csp, **options)
        contexts.append(context)
        page = context.new_page()
        page.dialogs = []
        page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
        page.goto("/login")
        page.get_by_label("Email").fill(f"{role}@acme.test")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_load_state("networkidle")
        assert "/login" not in page.url, page.content()[:500]
        return page

    yield sign_in
    for context in contexts:
        context.close()
