"""The channel form for an Instagram channel: saving it reads the account's publishing limit before the write, with
the token typed, or the stored one while the destination stays the same; never the stored token for a new one."""

import pytest
from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session
from tests.fakes.meta import MetaGraph

TOKEN = "meta-token"
ACCOUNT = "17841400000000001"


def config_of(app, name: str) -> Channel:
    with app.app_context(), read_session() as session:
        return session.scalar(select(Channel).where(Channel.name == name))


@pytest.mark.only_backend("sqlite")
def test_saving_an_instagram_channel_reads_its_publishing_limit_and_the_stored_token_stays_at_its_destination(
        app, world, browser_for, httpserver):
    fake = MetaGraph(httpserver, "instagram", token=TOKEN, account=ACCOUNT)
    admin = browser_for("admin")
    settings = f"url = {fake.base}\nig_user_id = {ACCOUNT}"
    added = admin.post("/channels", {"name": "insta", "kind": "instagram", "settings": settings, "secret": TOKEN})
    assert added.status_code == 303, added.get_data(as_text=True)
    channel = config_of(app, "insta")
    assert channel.config["network_rate"] == "100/86400s" and len(fake.of("limit")) == 1
    fake.quota_total = 60  # the account's limit changed: the next save reads it with the stored token
    again = admin.post(f"/channels/{channel.id}", {"name": "insta", "kind": "instagram", "settings": settings})
    assert again.status_code == 303
    assert config_of(app, "insta").config["network_rate"] == "60/86400s" and len(fake.of("limit")) == 2
    moved = admin.post(f"/channels/{channel.id}", {"name": "insta", "kind": "instagram",
                                                   "settings": f"url = {fake.base}/elsewhere\nig_user_id = {ACCOUNT}"})
    assert moved.status_code == 422 and "secret" in moved.get_data(as_text=True)
    assert len(fake.requests) == 2  # the stored token went nowhere new
