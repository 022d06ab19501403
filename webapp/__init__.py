"""The Flask application factory."""

from pathlib import Path

from flask import Flask
from werkzeug.routing import IntegerConverter

from models.timing.clock import SystemClock

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


class RowIdConverter(IntegerConverter):
    """``<int:...>`` in every route: ids are 32-bit on PostgreSQL, so a larger number is no
    row of ours and answers 404 at routing instead of reaching the database.

    The range is written into the pattern itself (1 to 2**31 - 1, no leading zeros): a value
    refused later, by the converter, would let the router answer 405 when another method's
    rule has the same path.
    """

    regex = (r"(?:[1-9]\d{0,8}|1\d{9}|20\d{8}|21[0-3]\d{7}|214[0-6]\d{6}|2147[0-3]\d{5}|21474[0-7]\d{4}"
             r"|214748[0-2]\d{3}|2147483[0-5]\d{2}|21474836[0-3]\d|214748364[0-7])")

    def __init__(self, url_map, *args, **kwargs):
        kwargs.setdefault("max", 2**31 - 1)
        super().__init__(url_map, *args, **kwargs)


def create_app(test_config: dict | None = None) -> Flask:
    """Build the app: defaults, then the environment, then ``test_config``, then extensions."""
    app = Flask(__name__, instance_relative_config=True)
    app.url_map.converters["int"] = RowIdConverter
    from webapp.config import build_policy, default_settings, finish_settings

    app.config.from_mapping(default_settings(app.instance_path))
    if test_config:
        app.config.from_mapping(test_config)
    finish_settings(app.config, app.instance_path)

    import jobs
    from models import wings  # every table on the metadata, before anything uses it
    from models.core import egress, runtime
    from models.core.database import configure_engine, db
    from models.channels.providers import postmark
    from models.core.secrets_box import SecretBox
    from models.media import settings as media_settings
    from webapp import access_log, api, assets, auth, cli, errors, limits, pages, public, uploads, watchdog
    from webapp.extensions import csrf, migrate

    egress.configure(app.config["TICKWORK_EGRESS_ALLOW"])
    postmark.configure(app.config["TICKWORK_POSTMARK_SETTLE_MINUTES"])
    media_settings.configure(media_settings.MediaSettings(
        root=Path(app.config["TICKWORK_MEDIA_DIR"]), image_max_bytes=app.config["TICKWORK_MEDIA_MAX_IMAGE_BYTES"],
        gif_max_bytes=app.config["TICKWORK_MEDIA_MAX_GIF_BYTES"], video_max_bytes=app.config["TICKWORK_MEDIA_MAX_VIDEO_BYTES"],
        base_url=app.config.get("TICKWORK_BASE_URL")))
    db.init_app(app)
    with app.app_context():
        configure_engine(db.engine)
    migrate.init_app(app, db, directory=str(MIGRATIONS_DIR))
    csrf.init_app(app)
    policy = build_policy(app.config["TICKWORK_POLICY"])
    uploads.init_app(app)
    runtime.init_app(
        app,
        clock=app.config.get("TICKWORK_CLOCK") or SystemClock(),
        policy=policy,
        secret_box=SecretBox(app.config["SECRET_KEY"]),
        hooks=wings.install_hooks(policy),
    )
    jobs.init_app(app)
    auth.init_app(app)
    errors.init_app(app)
    api.init_app(app)
    pages.init_app(app)
    assets.init_app(app)
    public.init_app(app)
    access_log.init_app(app)
    limits.init_app(app)
    cli.init_app(app)
    watchdog.init_app(app)
    return app
