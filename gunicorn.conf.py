"""gunicorn's settings when started by hand from this folder (``gunicorn wsgi:app``): the access log
redacts the tokens in public routes' addresses (webapp/access_log.py), as ``tickwork serve``'s does."""

logger_class = "webapp.access_log.GunicornAccessLogger"
