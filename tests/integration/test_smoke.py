from tests.conftest import T0


def test_create_then_get_an_action(client, world):
    answer = client.post("/api/v1/actions", headers=world.auth(), json={
        "action_type": "send_email", "channel": "main", "target_key": "a@example.com",
        "payload": {"subject": "hi"}, "publish_at": "2026-06-01T15:00:00+02:00"})
    assert answer.status_code == 201, answer.json
    assert answer.json["publish_at"] == "2026-06-01T13:00:00Z"
    got = client.get(f"/api/v1/actions/{answer.json['id']}", headers=world.auth())
    assert got.json["events"][0]["to"] == "queued"
