"""Drip campaigns: enrollments that advance step by step, at most once, in the recipient's waking hours.

One lifecycle module per lifecycle, each written as the house writes them (a table of moves,
one guarded UPDATE per move, an event per move):
- ``campaigns.py``: a campaign, ``draft → active ⇄ paused → archived``;
- ``contacts.py``: a contact's unsubscribe and hard bounce;
- ``enrollments.py``: an enrollment's steps (``active`` / ``completed`` / ``exited``) and its sends.

Around them: ``tables.py`` (the data), ``checks.py`` (what input must satisfy),
``schedule.py`` (delays and send windows in the contact's zone), ``templates.py`` (the
sandboxed rendering), ``unsubscribe.py`` (the signed link and its headers), ``webhooks.py``
(Postmark bounces, Twilio STOP), ``sending.py`` (mint, settle, re-mint: the one sending path,
through ``scheduled_actions``), ``operations.py`` (what people do), ``advance.py`` (the
``drip-advance`` clock job), ``enroll_csv.py`` (the CSV import's line checker), ``reading.py``
and ``hooks.py`` (what drips tell the floors below).
"""
