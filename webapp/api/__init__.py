"""The JSON API. Bearer tokens, not cookies, so it is exempt from CSRF."""

from flask import Flask

from webapp.api import actions, drips, posts
from webapp.extensions import csrf


def init_app(app: Flask) -> None:
    for blueprint in (actions.bp, posts.bp, drips.bp):
        csrf.exempt(blueprint)
        app.register_blueprint(blueprint)
