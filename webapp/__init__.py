"""The Flask application factory.

Importing this package imports no Flask: the command line's database-only commands
(:mod:`webapp.command_line`) start without it.
"""

from pathlib import Path

from models.timing.clock import SystemClock

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def create_app(test_config: dict | None = None) -> "Flask":
    """Build the app: defaults, then the environment, then ``test_config``, then extensions."""
    from flask import Flask

    from webapp.config import build_policy, default_settings, finish_settings, instance_folder
    from webapp.converters import RowIdConverter

    app = Flask(__name__, instance_path=instance_folder(), instance_relative_config=True)
    app.url_map.converters["int"] = RowIdConverter

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
