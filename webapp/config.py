"""Configuration from the environment, with defaults for a single box.

Every setting is checked when a process starts (:func:`finish_settings`, and for the command
line's database-only commands :func:`check_start_settings`). This module imports only light
modules: a setting whose parser lives in a heavy one (the egress policy, the alert rules,
the plans) is parsed by it only when the setting is given, since its default needs no check.
"""

import json
import os
import secrets
import sys
from pathlib import Path
from urllib.parse import urlsplit

from models.core.errors import ConfigurationError
from models.core.files import make_private_dir
from models.core.policy import Policy
from models.core.queue_url import queue_storage


def instance_folder() -> str:
    """The app's instance folder, where Flask's ``auto_find_instance_path`` puts it for this package.

    The checkout's ``instance/`` when run from a checkout (an editable install), else
    ``<prefix>/var/webapp-instance`` under the Python or virtualenv it is installed into.
    Written out here so a command that builds no app finds the same folder.
    """
    package_path = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if Path(package_path).is_relative_to(os.path.abspath(sys.prefix)):
        prefix = os.path.abspath(sys.prefix)
    else:
        site_parent, site_folder = os.path.split(package_path)
        prefix = None
        if site_folder.lower() == "site-packages":
            parent, folder = os.path.split(site_parent)
            if folder.lower() == "lib":
                prefix = parent
            elif os.path.basename(parent).lower() == "lib":
                prefix = os.path.dirname(parent)
            else:
                prefix = site_parent
    if prefix is None:
        return os.path.join(package_path, "instance")
    return os.path.join(prefix, "var", "webapp-instance")


def _secret_key(instance_path: Path) -> str:
    """TICKWORK_SECRET_KEY, or one generated into the instance folder on first run."""
    from_env = os.environ.get("TICKWORK_SECRET_KEY")
    if from_env:
        return from_env
    key_file = instance_path / "secret_key"
    if not key_file.exists():
        make_private_dir(instance_path)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(48))
    return key_file.read_text().strip()


def _default_queue_url(instance: Path) -> str:
    """PostgresHuey in the app database when that is PostgreSQL, else SqliteHuey beside the app's file."""
    database = os.environ.get("TICKWORK_DATABASE_URL") or ""
    if database.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return database
    if database.startswith("sqlite:///") and database != "sqlite:///:memory:":
        return f"sqlite:///{Path(database.removeprefix('sqlite:///')).with_name('tickwork-queue.db')}"
    return f"sqlite:///{instance / 'tickwork-queue.db'}"


def default_settings(instance_path: str) -> dict:
    instance = Path(instance_path)
    return {
        "SQLALCHEMY_DATABASE_URI": os.environ.get("TICKWORK_DATABASE_URL")
        or f"sqlite:///{instance / 'tickwork.db'}",
        "TICKWORK_QUEUE_URL": os.environ.get("TICKWORK_QUEUE_URL") or _default_queue_url(instance),
        "SECRET_KEY": None,  # filled after the test mapping, so tests never touch the instance folder
        "TICKWORK_POLICY": _policy_overrides(os.environ.get("TICKWORK_POLICY_JSON") or "{}"),
        "TICKWORK_BASE_URL": os.environ.get("TICKWORK_BASE_URL") or None,
        "TICKWORK_PLANS_JSON": os.environ.get("TICKWORK_PLANS_JSON") or None,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": os.environ.get("TICKWORK_COOKIE_SECURE", "0") == "1",
        "REMEMBER_COOKIE_HTTPONLY": True,
        "WTF_CSRF_TIME_LIMIT": None,
        "MAX_CONTENT_LENGTH": 2 * 1024 * 1024,
        "TICKWORK_RATELIMIT_STORAGE_URI": os.environ.get("TICKWORK_RATELIMIT_STORAGE_URI") or "memory://",
        "TICKWORK_SIGNIN_LIMIT_PER_ACCOUNT": os.environ.get("TICKWORK_SIGNIN_LIMIT_PER_ACCOUNT") or "10 per 10 minutes",
        "TICKWORK_SIGNIN_LIMIT_PER_ADDRESS": os.environ.get("TICKWORK_SIGNIN_LIMIT_PER_ADDRESS") or "50 per 10 minutes",
        "TICKWORK_API_RATE_LIMIT": os.environ.get("TICKWORK_API_RATE_LIMIT") or "1200 per minute",
        "TICKWORK_FEED_RATE_LIMIT": os.environ.get("TICKWORK_FEED_RATE_LIMIT") or "60 per hour",
        # An outside reviewer's link (its page and its decisions together), and everything one address asks of
        # review links, whichever link it names (a made-up one included).
        "TICKWORK_REVIEW_LINK_RATE_LIMIT": os.environ.get("TICKWORK_REVIEW_LINK_RATE_LIMIT") or "30 per minute",
        "TICKWORK_REVIEW_ADDRESS_RATE_LIMIT": os.environ.get("TICKWORK_REVIEW_ADDRESS_RATE_LIMIT") or "60 per minute",
        # A signed-in session unused this long (whole minutes) has ended: the next request signs in again.
        "TICKWORK_SESSION_IDLE_MINUTES": os.environ.get("TICKWORK_SESSION_IDLE_MINUTES") or 60,
        # How long Postmark's outbound search may lag behind a send (whole minutes): an unknown outcome
        # not found there is asked again until then, and failed for a person after.
        "TICKWORK_POSTMARK_SETTLE_MINUTES": os.environ.get("TICKWORK_POSTMARK_SETTLE_MINUTES") or 5,
        # Retention: terminal actions older than this are archived, then pruned; clock runs,
        # outbox entries and heartbeats are pruned after their own ages (days, whole numbers).
        "TICKWORK_ARCHIVE_DIR": os.environ.get("TICKWORK_ARCHIVE_DIR") or str(instance),
        "TICKWORK_RETENTION_DAYS": os.environ.get("TICKWORK_RETENTION_DAYS") or 90,
        "TICKWORK_CLOCK_RUN_RETENTION_DAYS": os.environ.get("TICKWORK_CLOCK_RUN_RETENTION_DAYS") or 30,
        "TICKWORK_OUTBOX_RETENTION_DAYS": os.environ.get("TICKWORK_OUTBOX_RETENTION_DAYS") or 30,
        "TICKWORK_HEARTBEAT_RETENTION_DAYS": os.environ.get("TICKWORK_HEARTBEAT_RETENTION_DAYS") or 7,
        # The public address links are made under (drip unsubscribe links, provider webhooks).
        "TICKWORK_BASE_URL": os.environ.get("TICKWORK_BASE_URL") or None,
        # Exceptions to the egress policy (models/core/egress.py): CIDRs and host names, comma-separated.
        "TICKWORK_EGRESS_ALLOW": os.environ.get("TICKWORK_EGRESS_ALLOW") or "",
        # Alerts (models/alerts/operator.py): the instance rules' settings, and where instance alerts go directly.
        **{name: os.environ.get(name) or None for name in ALERT_SETTINGS},
        # The media library: its folder (every host mounts it, like the archive folder) and the
        # largest file of each kind, in bytes.
        "TICKWORK_MEDIA_DIR": os.environ.get("TICKWORK_MEDIA_DIR") or str(instance / "media"),
        "TICKWORK_MEDIA_MAX_IMAGE_BYTES": os.environ.get("TICKWORK_MEDIA_MAX_IMAGE_BYTES") or 20 * 1024 * 1024,
        "TICKWORK_MEDIA_MAX_GIF_BYTES": os.environ.get("TICKWORK_MEDIA_MAX_GIF_BYTES") or 15 * 1024 * 1024,
        "TICKWORK_MEDIA_MAX_VIDEO_BYTES": os.environ.get("TICKWORK_MEDIA_MAX_VIDEO_BYTES") or 100 * 1024 * 1024,
        # Connected accounts: each network's app, TICKWORK_OAUTH_<KIND>_CLIENT_ID and _CLIENT_SECRET
        # (models/channels/connections.py).
        **{name: value for name, value in os.environ.items() if name.startswith("TICKWORK_OAUTH_") and value},
    }


def finish_settings(config: dict, instance_path: str, *, alerts: bool = True) -> None:
    """Check the settings (a bad one stops the start, naming it) and fill in what follows from them.

    ``alerts=False`` (a command that sends no alert) checks the alert settings only when one is given,
    without reading them into ``TICKWORK_ALERT_RULES`` and ``TICKWORK_ALERT_DESTINATIONS``.
    """
    if not config.get("SECRET_KEY"):
        config["SECRET_KEY"] = _secret_key(Path(instance_path))
    check_secret_key(config["SECRET_KEY"])
    check_base_url(config.get("TICKWORK_BASE_URL"))
    check_ratelimit_storage(config.get("TICKWORK_RATELIMIT_STORAGE_URI"))
    if config.get("TICKWORK_EGRESS_ALLOW"):
        from models.core.egress import parse_allow

        parse_allow(config["TICKWORK_EGRESS_ALLOW"])  # a bad entry stops the start, naming it
    if alerts:
        config["TICKWORK_ALERT_RULES"], config["TICKWORK_ALERT_DESTINATIONS"] = _alert_settings(config)
    elif any(config.get(name) for name in ALERT_SETTINGS):
        _alert_settings(config)
    for name in RETENTION_DAYS:
        config[name] = check_days(name, config.get(name))
    for name in MEDIA_SIZES:
        config[name] = check_bytes(name, config.get(name))
    config["TICKWORK_SESSION_IDLE_MINUTES"] = check_idle_minutes(config.get("TICKWORK_SESSION_IDLE_MINUTES"))
    config["TICKWORK_POSTMARK_SETTLE_MINUTES"] = check_settle_minutes(config.get("TICKWORK_POSTMARK_SETTLE_MINUTES"))
    uri = config["SQLALCHEMY_DATABASE_URI"]
    check_database_url(uri)
    if uri.startswith("postgresql://") or uri.startswith("postgres://"):
        config["SQLALCHEMY_DATABASE_URI"] = "postgresql+psycopg://" + uri.split("://", 1)[1]
    if config["SQLALCHEMY_DATABASE_URI"].startswith("postgresql"):
        # A pooled connection may have died since it was last used (a restarted server, a killed
        # backend, a failover): test it on checkout, so the outage costs no request or job an error.
        options = dict(config.get("SQLALCHEMY_ENGINE_OPTIONS") or {})
        options.setdefault("pool_pre_ping", True)
        config["SQLALCHEMY_ENGINE_OPTIONS"] = options
    if uri.startswith("sqlite:///"):
        make_private_dir(Path(uri.removeprefix("sqlite:///")).parent)


def _alert_settings(config: dict) -> tuple[dict, list]:
    from models.alerts.operator import direct_destinations, rule_settings

    return rule_settings(config.get("TICKWORK_ALERT_RULES_JSON")), direct_destinations(config)


def database_only_settings() -> dict:
    """The settings of a command that needs only the database (``webapp.database_commands``), built and
    checked as :func:`webapp.create_app` checks them, in its order, without building the app: a setting
    no process could start with stops this one too, naming it."""
    instance = instance_folder()
    config = default_settings(instance)
    finish_settings(config, instance, alerts=False)
    build_policy(config["TICKWORK_POLICY"])
    try:
        queue_storage(config["TICKWORK_QUEUE_URL"])  # as jobs.init_app
        if config.get("TICKWORK_PLANS_JSON"):  # as jobs.works.init_app; the default plans are good
            from models.works.plans import parse_plans

            parse_plans(config["TICKWORK_PLANS_JSON"])
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    return config


ALERT_SETTINGS = ("TICKWORK_ALERT_RULES_JSON", "TICKWORK_ALERT_SMTP_URL", "TICKWORK_ALERT_EMAIL_TO",
                  "TICKWORK_ALERT_EMAIL_FROM", "TICKWORK_ALERT_WEBHOOK_URL", "TICKWORK_ALERT_WEBHOOK_SECRET",
                  "TICKWORK_ALERT_WATCHDOG")

RETENTION_DAYS = ("TICKWORK_RETENTION_DAYS", "TICKWORK_CLOCK_RUN_RETENTION_DAYS", "TICKWORK_OUTBOX_RETENTION_DAYS",
                  "TICKWORK_HEARTBEAT_RETENTION_DAYS")


MEDIA_SIZES = ("TICKWORK_MEDIA_MAX_IMAGE_BYTES", "TICKWORK_MEDIA_MAX_GIF_BYTES", "TICKWORK_MEDIA_MAX_VIDEO_BYTES")


def check_bytes(name: str, value) -> int:
    """A media size limit: a whole number of bytes, from 1 KiB to 4 GiB."""
    try:
        size = int(str(value).strip())
    except ValueError:
        size = 0
    if size < 1024 or size > 4 * 1024**3:
        raise ConfigurationError(f"{name} {value!r}: expected a whole number of bytes from 1024 to 4294967296, "
                                 "such as 20971520")
    return size


def check_days(name: str, value) -> int:
    """A retention setting: a whole number of days, at least one."""
    try:
        days = int(str(value).strip())
    except ValueError:
        days = 0
    if days < 1 or days > 36_500:
        raise ConfigurationError(f"{name} {value!r}: expected a whole number of days from 1 to 36500, such as 90")
    return days


def check_idle_minutes(value) -> int:
    """TICKWORK_SESSION_IDLE_MINUTES: a whole number of minutes, from 1 to a year."""
    try:
        minutes = int(str(value).strip())
    except ValueError:
        minutes = 0
    if minutes < 1 or minutes > 525_600:
        raise ConfigurationError(f"TICKWORK_SESSION_IDLE_MINUTES {value!r}: expected a whole number of minutes from "
                                 "1 to 525600, such as 60")
    return minutes


def check_settle_minutes(value) -> int:
    """TICKWORK_POSTMARK_SETTLE_MINUTES: a whole number of minutes, from 0 to a day."""
    try:
        minutes = int(str(value).strip())
    except ValueError:
        minutes = -1
    if minutes < 0 or minutes > 1440:
        raise ConfigurationError(f"TICKWORK_POSTMARK_SETTLE_MINUTES {value!r}: expected a whole number of minutes "
                                 "from 0 to 1440, such as 5")
    return minutes


def _policy_overrides(text: str) -> dict:
    try:
        overrides = json.loads(text)
    except ValueError as exc:
        raise ConfigurationError(f"TICKWORK_POLICY_JSON is not valid JSON: {exc}") from None
    if not isinstance(overrides, dict):
        raise ConfigurationError("TICKWORK_POLICY_JSON must be a JSON object, such as {\"dispatch_chunk\": 20}")
    return overrides


def build_policy(overrides: dict) -> Policy:
    try:
        return Policy().with_overrides(overrides or {})
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"TICKWORK_POLICY_JSON: {exc}") from None


def check_database_url(uri: str) -> None:
    if not uri.startswith(("sqlite://", "postgresql://", "postgres://", "postgresql+psycopg://")):
        raise ConfigurationError(f"TICKWORK_DATABASE_URL {uri.split('://', 1)[0]}://...: expected sqlite:///path "
                                 "or postgresql://user@host/database")


MIN_SECRET_BYTES = 32


def check_secret_key(key) -> None:
    """TICKWORK_SECRET_KEY signs sessions and seals channel secrets: at least 32 bytes of it."""
    length = len(key.encode() if isinstance(key, str) else bytes(key))
    if length < MIN_SECRET_BYTES:
        raise ConfigurationError(
            f"TICKWORK_SECRET_KEY is {length} byte{'' if length == 1 else 's'} long; it must be at least "
            f"{MIN_SECRET_BYTES} (make one with: python -c \"import secrets; print(secrets.token_urlsafe(48))\"), "
            "or leave it unset to have one generated into the instance folder")


def check_ratelimit_storage(uri: str | None) -> None:
    """TICKWORK_RATELIMIT_STORAGE_URI names a storage the limits library has (and whose driver is installed)."""
    if not uri or uri == "memory://":
        return
    from limits.errors import ConfigurationError as LimitsError
    from limits.storage import storage_from_string

    try:
        storage_from_string(uri)  # builds the client only: no connection is made here
    except LimitsError as exc:
        raise ConfigurationError(f"TICKWORK_RATELIMIT_STORAGE_URI {uri.split('://', 1)[0]}://...: {exc}; expected "
                                 "memory:// (one process), or redis://host:6379 shared by every web process") from None


def check_base_url(url: str | None) -> None:
    """TICKWORK_BASE_URL, when set, is an http(s) address with a host and nothing after its path."""
    if not url:
        return
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
        raise ConfigurationError(f"TICKWORK_BASE_URL {url!r}: expected the public address of this Tickwork, "
                                 "such as https://tickwork.example.com")
