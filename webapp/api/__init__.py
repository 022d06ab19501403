"""The JSON API. Bearer tokens, not cookies, so it is exempt from CSRF (and limited per token: webapp/limits.py)."""

from flask import Flask

from webapp.api import (actions, channels, drips, media, openapi, post_imports, post_review, posts, recurring, tokens,
                        works, workspace)
from webapp.extensions import csrf


def init_app(app: Flask) -> None:
    for blueprint in (actions.bp, channels.bp, posts.bp, post_imports.bp, recurring.bp, works.seed, works.bp,
                      drips.bp, media.bp, tokens.bp, post_review.bp, workspace.bp, openapi.bp):
        csrf.exempt(blueprint)
        app.register_blueprint(blueprint)
