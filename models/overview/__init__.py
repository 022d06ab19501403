"""Read models that combine the floors below: the calendar and the clock's health."""
