"""Helpers shared by the chat networks' tests (Discord, Slack, Telegram, Mastodon's media): a channel added the way
an operator adds one (``tickwork channel add``), library media, a post sent through the real dispatch."""

import json

from tests.integration.clock_helpers import add_actions, row, tick
from tests.media_files import multipart

LATER = "2026-06-01T10:00"  # 14:00Z, two hours after the suite's T0


def add_channel(app, kind: str, url: str, secret: str, config: dict | None = None, name: str | None = None,
                workspace: str = "Acme") -> None:
    """``tickwork channel add --kind KIND --url URL --secret SECRET --config JSON``, as an operator runs it."""
    args = ["channel", "add", "--workspace", workspace, "--name", name or kind, "--kind", kind, "--url", url,
            "--secret", secret]
    if config:
        args += ["--config", json.dumps(config)]
    result = app.test_cli_runner().invoke(args=args)
    assert result.exit_code == 0, result.output


def upload(client, world, data: bytes, name: str = "photo.png", alt: str = "") -> int:
    body, content_type = multipart(data, name, alt=alt)
    answer = client.post("/api/v1/media", headers=world.auth("marketer"), content_type=content_type, data=body)
    assert answer.status_code == 201, answer.json
    return answer.json["id"]


def new_post(client, world, targets, body: str, media=()):
    return client.post("/api/v1/posts", headers=world.auth("marketer"), json={
        "body": body, "targets": list(targets), "local_time": LATER, "media": list(media)})


def send_post(app, client, world, clock, target: str, body: str, media=()):
    """A post approved for ``target`` and sent by a tick at its time: its row after the send."""
    created = new_post(client, world, [target], body, media)
    assert created.status_code == 201, created.json
    approved = client.post(f"/api/v1/posts/{created.json['id']}/approve", headers=world.auth("marketer"))
    assert approved.status_code == 200, approved.json
    clock.advance(hours=2)
    tick(app)
    shown = client.get(f"/api/v1/posts/{created.json['id']}", headers=world.auth()).json
    return row(app, shown["targets"][0]["action_id"])


def send_row(app, workspace_id: int, payload: dict, channel: str):
    """One row due now with ``payload``, sent by a tick: the row after the send."""
    [action_id] = add_actions(app, workspace_id, 1, payload=payload, channel=channel)
    tick(app)
    return row(app, action_id)


def direct_send(module, config: dict, secret: str, payload: dict, media=()):
    """``module.send`` of one delivery outside any dispatch (what a channel's test send does), for what a row does
    not keep, such as whether the channel needs reconnecting."""
    from datetime import datetime, timezone

    from models.channels.providers import Delivery, SendContext
    from models.channels.providers.http import http_client

    now = datetime(2026, 6, 1, 12, tzinfo=timezone.utc)
    delivery = Delivery(action_id=7, workspace_id=1, channel_id=1, channel_name="chat", action_type="publish_post",
                        target_key="chat", payload=payload, publish_at=now, attempt=1, config=config, secret=secret,
                        media=tuple(media))
    return module.send(delivery, SendContext(now=now, timeout=2, http=http_client(), sleep=lambda _seconds: None))
