"""The WSGI entry point: ``gunicorn wsgi:app``."""

from models.core.files import set_private_umask
from webapp import create_app

set_private_umask()  # the database, its WAL and the queue file are the owner's alone
app = create_app()
