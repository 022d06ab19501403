"""Operator words for failures and refusals: what happened, in a sentence a person can act on."""

from models.actions.tables import FailureCode, ScheduledAction, Status
from models.core.errors import Conflict, DomainError, Forbidden, NotFound

# A short label per failure code, and the sentence shown when the row carries no detail.
FAILURE_WORDS = {
    FailureCode.PERMANENT.value: ("Refused for good", "the provider refused it and will not take it later"),
    FailureCode.OUTCOME_UNKNOWN.value: ("Outcome unknown", "it may or may not have gone out"),
    FailureCode.WORKER_LOST.value: ("Worker lost", "the worker sending it stopped answering; it may or may not "
                                    "have gone out"),
    FailureCode.MISSED_WINDOW.value: ("Missed its window", "the clock found it too late to send"),
    FailureCode.DUPLICATE_OF_PUBLISHED.value: ("Not sent", "the same thing already went out to this target"),
    FailureCode.ATTEMPTS_EXHAUSTED.value: ("Out of attempts", "every attempt of its budget was used"),
    FailureCode.CONTENT_ERROR.value: ("Could not be built", "its content could not be built; it was never sent"),
}


def failure_reason(row: ScheduledAction) -> str:
    """One line on why a failed row failed: a short label, then the provider's or the clock's words."""
    label, fallback = FAILURE_WORDS.get(row.failure_code or "", ("Did not go out", "no reason was recorded"))
    detail = (row.last_error or "").strip()
    # Providers often repeat the label ("outcome unknown: ..."); say it once.
    if detail.lower().startswith(label.lower()):
        detail = detail[len(label):].lstrip(" :;,-")
    return f"{label}: {detail or fallback}"


def clock(viewer, instant) -> str:
    return viewer.local(instant).strftime("%H:%M:%S") if instant else "an unknown time"


def state_words(row: ScheduledAction, viewer) -> str:
    """Why a row can no longer be changed, from its current status."""
    if row.status == Status.PUBLISHED.value:
        return f"Already sent at {clock(viewer, row.finished_at)}."
    if row.status == Status.SUBMITTED.value:
        return f"Being sent right now (claimed at {clock(viewer, row.submitted_at)})."
    if row.status == Status.CANCELLED.value:
        if row.cancel_kind == "rescheduled":
            return "Already rescheduled; change the newer row."
        return f"Already cancelled at {clock(viewer, row.finished_at)}."
    if row.status == Status.FAILED.value:
        return f"It failed at {clock(viewer, row.finished_at)}; an admin can retry it."
    return f"It is {row.status}."


def refusal_message(error: DomainError, row: ScheduledAction | None, viewer) -> str:
    """The sentence shown on a row when a change to it was refused."""
    if isinstance(error, Forbidden):
        return error.message
    if isinstance(error, NotFound):
        return "This action no longer exists in this workspace."
    if error.code == "in_the_past":
        return "That time is in the past; pick a later one."
    if isinstance(error, Conflict):
        if error.code == "attempts_exhausted":
            return f"Attempts exhausted ({row.attempt_count} used); it cannot be retried." if row else "Attempts exhausted."
        if error.code == "follows_post":
            return "This action follows its post; move the post instead."
        if error.code == "follows_enrollment":
            return "This drip send follows its enrollment; it cannot be rescheduled by itself."
        if error.code == "follows_notification":
            return "This is one of Tickwork's own notifications; it cannot be rescheduled."
        if error.code == "already_published":
            return "This thing was already published to this target."
        if error.code == "wrong_state" and row is not None:
            return state_words(row, viewer)
    return error.message


def summary_sentence(summary) -> str:
    """A clock run's summary as a sentence ("Last pass: 0 due, nothing sent"), not a dump of its keys.

    Counts that are zero are left out, save the tick's ``due``; nested counts (outcomes) are said
    after a colon; a run that counted nothing says so."""
    if not isinstance(summary, dict):
        return "Last pass: no summary."
    parts = []
    if "due" in summary:
        parts.append(f"{summary['due']} due")
        sent = summary.get("dispatched", 0)
        parts.append(f"{sent} sent" if sent else "nothing sent")
    for key, value in sorted(summary.items()):
        if key in ("due", "dispatched", "rollup", "errors") or isinstance(value, (list, str)) or value in (0, None):
            continue
        if isinstance(value, dict):
            inner = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(value.items()) if n)
            if inner:
                parts.append(f"{key.replace('_', ' ')}: {inner}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            parts.append(f"{value:g} {key.replace('_', ' ')}")
    errors = summary.get("errors")
    if errors:
        parts.append(f"{len(errors)} error{'s' if len(errors) != 1 else ''}")
    return "Last pass: " + (", ".join(parts) if parts else "nothing to do") + "."
