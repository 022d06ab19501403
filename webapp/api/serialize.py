"""JSON shapes of the API's resources."""

from datetime import datetime, timezone


def iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def action_json(row, *, channel_name: str | None = None, events=None) -> dict:
    body = {
        "id": row.id,
        "action_type": row.action_type,
        "channel": channel_name,
        "target_key": row.target_key,
        "thing_id": row.thing_id,
        "payload": row.payload,
        "publish_at": iso(row.publish_at),
        "status": row.status,
        "origin": row.origin,
        "cancel_kind": row.cancel_kind,
        "attempt_count": row.attempt_count,
        "next_attempt_at": iso(row.next_attempt_at),
        "last_error": row.last_error,
        "failure_code": row.failure_code,
        "provider_id": row.provider_id,
        "rescheduled_from": row.rescheduled_from_id,
        "submitted_at": iso(row.submitted_at),
        "finished_at": iso(row.finished_at),
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
    }
    if events is not None:
        body["events"] = [
            {
                "from": event.from_status,
                "to": event.to_status,
                "at": iso(event.at),
                "actor": event.actor,
                "reason": event.reason,
                "clock_run_id": event.clock_run_id,
            }
            for event in events
        ]
    return body
