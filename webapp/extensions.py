"""Flask extensions that are created once and bound to the app by the factory."""

from flask_migrate import Migrate
from flask_wtf import CSRFProtect

migrate = Migrate()
csrf = CSRFProtect()
