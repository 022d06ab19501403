"""Files and logs: what Tickwork creates is its owner's alone (folders 0700, files 0600, umask 077 at
every entry point), the access log keeps no token of a public route's address, a short secret key
and zones that are no IANA zone are refused at start and at write.

The commands run as an operator runs them, as child processes started with a permissive umask
(022), so only Tickwork's own umask and modes can make the files private. SQLite only: the files
are SQLite's; the log lines are the web server's.
"""

import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time

import httpx
import pytest
from werkzeug.serving import make_server

from jobs.serve import Supervisor
from models.timing.wall_time import InvalidTimezone, is_known_zone, load_zone
from tests.conftest import ROOT, TEST_SECRET
from webapp import create_app
from webapp.access_log import REDACTED, redact, token_patterns
from webapp.public import PUBLIC_ROUTES

pytestmark = pytest.mark.only_backend("sqlite")

TICKWORK = shutil.which("tickwork", path=str(ROOT / ".venv" / "bin")) or shutil.which("tickwork")
TOKENS = ("SeCrEtUnsub123", "twcal_SeCrEtFeed456", "SeCrEtHook789", "SeCrEtRun000")


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _run(args, env, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, umask=0o022, **kwargs)


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    """A single box made by ``tickwork db upgrade`` (started with umask 022): the app database and the
    queue under a folder that did not exist before, its queue file opened once."""
    folder = tmp_path_factory.mktemp("box") / "instance"
    env = dict(os.environ, TICKWORK_DATABASE_URL=f"sqlite:///{folder / 'tickwork.db'}",
               TICKWORK_SECRET_KEY=TEST_SECRET, TICKWORK_BASE_URL="https://tickwork.example")
    env.pop("TICKWORK_QUEUE_URL", None)
    upgraded = _run([TICKWORK, "db", "upgrade"], env)
    assert upgraded.returncode == 0, upgraded.stderr
    typed = "from jobs.queue import huey\nhuey.pending_count()\nimport os\nprint(oct(os.umask(0)))\n"
    shell = _run([TICKWORK, "shell"], env, input=typed)  # the queue file is made on first use
    assert shell.returncode == 0, shell.stderr
    return type("Box", (), {"folder": folder, "env": env, "shell": shell.stdout})


def test_db_upgrade_makes_a_private_database_and_queue_in_a_private_folder_and_backups_stay_private(box, tmp_path):
    assert _mode(box.folder) == 0o700
    made = sorted(box.folder.iterdir())
    assert {p.name for p in made} >= {"tickwork.db", "tickwork-queue.db"}, made
    assert {p.name: _mode(p) for p in made} == {p.name: 0o600 for p in made}
    backup = tmp_path / "backups" / "one"
    backup.parent.mkdir(mode=0o755)
    taken = _run([TICKWORK, "backup", str(backup)], box.env)
    assert taken.returncode == 0, taken.stderr
    assert _mode(backup) == 0o700
    assert {p.name: _mode(p) for p in backup.iterdir()} == {p.name: 0o600 for p in backup.iterdir()}


def test_wsgi_and_the_tickwork_command_set_the_private_umask(box):
    assert "0o77" in box.shell, box.shell
    done = _run([sys.executable, "-c", "import os, wsgi; print(oct(os.umask(0)))"], box.env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0o77", done.stdout


def test_run_sh_sets_the_private_umask_before_anything_it_starts(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "run.sh", tmp_path / "scripts" / "run.sh")
    record = tmp_path / "umasks"
    fake = f"#!/usr/bin/env bash\necho \"$(basename $0) $1 $(umask)\" >> {record}\n"
    (tmp_path / "scripts" / "setup.sh").write_text(fake)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "tickwork").write_text(fake)
    for script in (tmp_path / "scripts" / "setup.sh", tmp_path / ".venv" / "bin" / "tickwork"):
        script.chmod(0o755)
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "run.sh")], capture_output=True, text=True, timeout=60,
                          umask=0o022)
    assert done.returncode == 0, done.stderr
    assert record.read_text().splitlines() == ["setup.sh  0077", "tickwork db 0077", "tickwork demo 0077",
                                               "tickwork serve 0077"]


def test_a_secret_key_shorter_than_32_bytes_is_refused_at_start(box):
    refused = _run([TICKWORK, "tick"], dict(box.env, TICKWORK_SECRET_KEY="k"))
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "TICKWORK_SECRET_KEY is 1 byte long; it must be at least 32" in line, line
    from models.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="at least 32"):
        create_app({"SECRET_KEY": "x" * 31, "SQLALCHEMY_DATABASE_URI": "sqlite:///:memory:"})
    assert create_app({"SECRET_KEY": "x" * 32, "SQLALCHEMY_DATABASE_URI": "sqlite:///:memory:"})


def test_a_rate_limit_storage_the_limits_library_does_not_know_is_refused_at_start_naming_it(box):
    refused = _run([TICKWORK, "tick"], dict(box.env, TICKWORK_RATELIMIT_STORAGE_URI="bogus://x"))
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "TICKWORK_RATELIMIT_STORAGE_URI bogus://...: unknown storage scheme" in line, line
    from models.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="TICKWORK_RATELIMIT_STORAGE_URI"):
        create_app({"SECRET_KEY": "x" * 32, "SQLALCHEMY_DATABASE_URI": "sqlite:///:memory:",
                    "TICKWORK_RATELIMIT_STORAGE_URI": "bogus://x"})
    assert create_app({"SECRET_KEY": "x" * 32, "SQLALCHEMY_DATABASE_URI": "sqlite:///:memory:",
                       "TICKWORK_RATELIMIT_STORAGE_URI": "redis://127.0.0.1:6379"})  # a client, no connection yet


def test_zones_are_checked_against_the_iana_list_without_localtime_or_factory(box):
    for name in ("localtime", "Factory", "posixrules"):
        assert not is_known_zone(name)
        with pytest.raises(InvalidTimezone, match="not an IANA time zone"):
            load_zone(name)
    assert is_known_zone("Europe/Paris") and is_known_zone("UTC")
    refused = _run([TICKWORK, "workspace", "create", "Acme", "--timezone", "localtime"], box.env)
    assert refused.returncode == 1 and "'localtime' is not an IANA time zone" in refused.stderr


# -- the access log ---------------------------------------------------------------------------


def test_every_public_route_with_a_token_in_its_address_is_redacted_from_a_list_in_one_place(app):
    patterns = token_patterns(app)
    rules = [rule for rule in app.url_map.iter_rules() if rule.endpoint in PUBLIC_ROUTES and rule.arguments]
    assert len(patterns) == len(rules) >= 5  # unsubscribe (GET, POST), postmark, feed, run callback
    for rule in rules:
        path = rule.rule
        for argument in rule.arguments:
            path = path.replace(f"<int:{argument}>", "7").replace(f"<{argument}>", "SeCrEt-tok_en")
        line = f'127.0.0.1 - - [02/Dec/2026] "GET {path}?token=SeCrEtQuery HTTP/1.1" 200 12 "-" "curl"'
        cleaned = redact(line, patterns)
        assert "SeCrEt" not in cleaned and REDACTED in cleaned, (rule.rule, cleaned)
    assert redact('"GET /queue?status=failed HTTP/1.1" 200', patterns) == '"GET /queue?status=failed HTTP/1.1" 200'
    assert redact("/unsubscribe/7/SeCrEt", patterns) == f"/unsubscribe/7/{REDACTED}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _hit_public_routes(base: str) -> None:
    unsubscribe, feed, hook, run = TOKENS
    httpx.get(f"{base}/unsubscribe/1/{unsubscribe}", timeout=10)
    httpx.get(f"{base}/calendar/feed/{feed}.ics?x={feed}", timeout=10)
    httpx.post(f"{base}/hooks/postmark/1/{hook}/bounce", json={}, timeout=10)
    httpx.post(f"{base}/api/works/runs/{run}/callback", json={}, timeout=10)
    httpx.get(f"{base}/healthz", timeout=10)


def test_the_access_log_of_tickwork_serves_web_process_keeps_no_token(box, tmp_path):
    port = _free_port()
    [web] = [child for child in Supervisor.for_single_box(host="127.0.0.1", port=port, web_workers=1).children
             if child.name == "web"]
    log = tmp_path / "web.log"
    with log.open("w") as out:
        process = subprocess.Popen(web.argv, cwd=ROOT, env=box.env, stdout=out, stderr=out)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:  # any answer: without a consumer /healthz says 503, yet the server is up
                    httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            _hit_public_routes(f"http://127.0.0.1:{port}")
            time.sleep(0.5)
        finally:
            process.terminate()
            process.wait(timeout=30)
    lines = log.read_text()
    assert "GET /healthz" in lines, lines[-2000:]
    assert lines.count(REDACTED) >= 4, lines[-2000:]
    assert not any(token in lines for token in TOKENS), lines[-2000:]


def test_the_development_servers_request_lines_keep_no_token(app, caplog):
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with caplog.at_level(logging.INFO, logger="werkzeug"):
            _hit_public_routes(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        thread.join(timeout=5)
    lines = "\n".join(record.getMessage() for record in caplog.records if record.name == "werkzeug")
    assert "/healthz" in lines and lines.count(REDACTED) >= 4, lines
    assert not any(token in lines for token in TOKENS), lines
