"""What recurring rules tell the floors below them, registered at start-up (see :mod:`models.core.hooks`)."""


def register(hooks) -> None:
    """Put the recurring rules' parts on every hook they answer."""
