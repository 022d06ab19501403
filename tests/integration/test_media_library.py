"""``/api/v1/media``: files checked by their content, stored by sha256 without EXIF or GPS, referred to by posts by id."""

import hashlib
import io
from pathlib import Path

import pytest
from PIL import Image
from sqlalchemy import func, select

from models.core.database import db
from models.media.tables import Media
from models.posts.tables import Post
from tests.conftest import make_world
from tests.media_files import bomb_png, gif_bytes, jpeg_with_gps, mp4_bytes, noisy_jpeg, png_bytes

LATER = "2026-06-01T10:00"


def upload(client, world, data: bytes, name: str = "photo.jpg", alt: str | None = None, role: str = "marketer"):
    form = {"file": (io.BytesIO(data), name)}
    if alt is not None:
        form["alt"] = alt
    return client.post("/api/v1/media", headers=world.auth(role), data=form, content_type="multipart/form-data")


def download(client, world, media_id: int, role: str = "admin"):
    """The item's file answer, read and closed (a file answer holds the file open until then)."""
    answer = client.get(f"/api/v1/media/{media_id}/file", headers=world.auth(role))
    answer.get_data()
    answer.close()
    return answer


def _count(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Media))


def test_an_uploaded_photo_loses_its_exif_and_gps_and_is_stored_by_its_sha256(app, client, world, app_config):
    sent = jpeg_with_gps()
    assert Image.open(io.BytesIO(sent)).getexif().get_ifd(0x8825)  # the GPS is really there before
    answer = upload(client, world, sent, alt="A loaf on a board")
    assert answer.status_code == 201, answer.json
    item = answer.json
    assert (item["kind"], item["mime"], item["width"], item["height"], item["alt"]) == (
        "image", "image/jpeg", 64, 48, "A loaf on a board")
    stored = Path(app_config["TICKWORK_MEDIA_DIR"]) / item["sha256"][:2] / item["sha256"]
    data = stored.read_bytes()
    assert hashlib.sha256(data).hexdigest() == item["sha256"] and len(data) == item["bytes"]
    assert b"Test Camera" not in data and b"Exif" not in data
    with Image.open(io.BytesIO(data)) as image:
        assert dict(image.getexif()) == {} and image.size == (64, 48)
    fetched = download(client, world, item["id"], "ops")
    assert fetched.status_code == 200 and fetched.data == data and fetched.mimetype == "image/jpeg"
    assert fetched.headers["X-Content-Type-Options"] == "nosniff"


def test_a_photo_turned_by_its_exif_is_turned_for_real_when_the_tag_goes(client, world):
    answer = upload(client, world, jpeg_with_gps(size=(64, 48), orientation=6))
    assert answer.status_code == 201, answer.json
    assert (answer.json["width"], answer.json["height"]) == (48, 64)


def test_a_file_is_known_by_its_content_not_its_name(app, client, world):
    png = upload(client, world, png_bytes(), name="holiday.jpg")
    assert png.status_code == 201 and (png.json["kind"], png.json["mime"]) == ("image", "image/png")
    gif = upload(client, world, gif_bytes(), name="x.png")
    assert gif.status_code == 201 and (gif.json["kind"], gif.json["mime"]) == ("gif", "image/gif")
    video = upload(client, world, mp4_bytes(width=640, height=360, seconds=2.5), name="clip.jpg")
    assert video.status_code == 201, video.json
    assert (video.json["kind"], video.json["mime"], video.json["width"], video.json["height"],
            video.json["duration"]) == ("video", "video/mp4", 640, 360, 2.5)
    before = _count(app)
    html = upload(client, world, b"<!doctype html><script>alert(1)</script>", name="cat.jpg")
    assert html.status_code == 422 and html.json["error"]["field"] == "file"
    assert html.json["error"]["code"] == "unsupported_type"
    png_holding_html = b"\x89PNG\r\n\x1a\n<html><script>alert(1)</script></html>"
    refused = upload(client, world, png_holding_html, name="cat.jpg")
    assert refused.status_code == 422 and refused.json["error"]["field"] == "file", refused.json
    assert _count(app) == before


def test_png_text_chunks_are_stripped(app, client, world, app_config):
    answer = upload(client, world, png_bytes(text="my home address"))
    assert answer.status_code == 201
    data = (Path(app_config["TICKWORK_MEDIA_DIR"]) / answer.json["sha256"][:2] / answer.json["sha256"]).read_bytes()
    assert b"my home address" not in data and b"tEXt" not in data
    with Image.open(io.BytesIO(data)) as image:
        assert image.size == (40, 30)


def test_a_decompression_bomb_is_refused_and_nothing_is_stored(app, client, world, app_config):
    answer = upload(client, world, bomb_png(), name="small.png")
    assert answer.status_code == 422, answer.json
    assert (answer.json["error"]["field"], answer.json["error"]["code"]) == ("file", "too_many_pixels")
    assert _count(app) == 0
    assert not Path(app_config["TICKWORK_MEDIA_DIR"]).exists() or not any(
        path.is_file() for path in Path(app_config["TICKWORK_MEDIA_DIR"]).rglob("*"))


@pytest.fixture
def small_images(app_config):
    app_config["TICKWORK_MEDIA_MAX_IMAGE_BYTES"] = 2048
    return app_config


def test_sizes_are_limited_per_kind(small_images, app, client, world):
    too_big = upload(client, world, noisy_jpeg(size=(100, 100)))
    assert too_big.status_code == 422 and too_big.json["error"]["code"] == "too_large", too_big.json
    assert upload(client, world, mp4_bytes()).status_code == 201  # videos keep their own limit
    assert _count(app) == 1


def test_bad_uploads_are_refused_naming_the_field(app, client, world):
    nothing = client.post("/api/v1/media", headers=world.auth(), data={"alt": "x"}, content_type="multipart/form-data")
    assert nothing.status_code == 422 and nothing.json["error"]["field"] == "file"
    empty = upload(client, world, b"")
    assert empty.status_code == 422 and empty.json["error"]["field"] == "file"
    long_alt = upload(client, world, png_bytes(), alt="x" * 5001)
    assert long_alt.status_code == 422 and long_alt.json["error"]["field"] == "alt"
    no_url = client.post("/api/v1/media", headers=world.auth(), json={"alt": "x"})
    assert no_url.status_code == 422 and no_url.json["error"]["field"] == "url"
    assert _count(app) == 0


def test_list_show_describe_and_keep_to_the_workspace(app, client, world):
    first = upload(client, world, png_bytes()).json
    second = upload(client, world, jpeg_with_gps()).json
    page = client.get("/api/v1/media?limit=1", headers=world.auth("ops")).json
    assert [item["id"] for item in page["media"]] == [second["id"]] and page["next_before"] == second["id"]
    rest = client.get(f"/api/v1/media?before={page['next_before']}", headers=world.auth("ops")).json
    assert [item["id"] for item in rest["media"]] == [first["id"]] and rest["next_before"] is None
    described = client.patch(f"/api/v1/media/{first['id']}", headers=world.auth(), json={"alt": "Green square"})
    assert described.status_code == 200 and described.json["alt"] == "Green square"
    assert client.patch(f"/api/v1/media/{first['id']}", headers=world.auth(), json={"alt": 5}).status_code == 422
    other = make_world(app, name="Other")
    assert client.get(f"/api/v1/media/{first['id']}", headers=other.auth()).status_code == 404
    assert download(client, other, first["id"]).status_code == 404
    assert client.delete(f"/api/v1/media/{first['id']}", headers=other.auth()).status_code == 404
    assert client.get("/api/v1/media", headers=other.auth()).json["media"] == []


def _post(client, world, **fields):
    body = {"body": "Fresh bread", "targets": ["main"], "local_time": LATER, **fields}
    return client.post("/api/v1/posts", headers=world.auth("marketer"), json=body)


def test_a_post_refers_to_media_by_id_and_deleting_it_is_refused_while_a_live_post_does(app, client, world,
                                                                                       app_config):
    item = upload(client, world, jpeg_with_gps()).json
    post = _post(client, world, media=[item["id"]])
    assert post.status_code == 201, post.json
    assert post.json["media"] == [item["id"]]
    shown = client.get(f"/api/v1/media/{item['id']}", headers=world.auth()).json
    assert shown["used_by"] == [f"post {post.json['id']}"]
    refused = client.delete(f"/api/v1/media/{item['id']}", headers=world.auth())
    assert refused.status_code == 409, refused.json
    assert refused.json["error"]["code"] == "media_in_use"
    assert refused.json["error"]["used_by"] == [f"post {post.json['id']}"]
    assert _count(app) == 1
    assert client.post(f"/api/v1/posts/{post.json['id']}/archive", headers=world.auth()).status_code == 200
    assert client.delete(f"/api/v1/media/{item['id']}", headers=world.auth()).status_code == 204
    assert _count(app) == 0
    assert not (Path(app_config["TICKWORK_MEDIA_DIR"]) / item["sha256"][:2] / item["sha256"]).exists()


def test_a_file_shared_by_two_items_stays_until_both_are_gone(app, client, world, app_config):
    one, two = (upload(client, world, png_bytes()).json for _ in range(2))
    assert one["sha256"] == two["sha256"] and one["id"] != two["id"]
    path = Path(app_config["TICKWORK_MEDIA_DIR"]) / one["sha256"][:2] / one["sha256"]
    assert client.delete(f"/api/v1/media/{one['id']}", headers=world.auth()).status_code == 204
    assert path.exists()
    assert client.delete(f"/api/v1/media/{two['id']}", headers=world.auth()).status_code == 204
    assert not path.exists()


@pytest.mark.parametrize("media, code", [
    ([999], "unknown_media"),
    (["12x"], "bad_media_id"),
    ([True], "bad_media_id"),
    ("1", "wrong_type"),
    ([0], "bad_media_id"),
    (["ftp://example.com/a.png"], "bad_media_id"),
])
def test_a_post_naming_media_wrongly_is_refused_and_nothing_changes(app, client, world, media, code):
    answer = _post(client, world, media=media)
    assert answer.status_code == 422, answer.json
    assert (answer.json["error"]["field"], answer.json["error"]["code"]) == ("media", code), answer.json
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Post)) == 0


def test_a_post_cannot_name_another_workspaces_media(app, client, world):
    other = make_world(app, name="Other")
    theirs = upload(client, other, png_bytes()).json
    answer = _post(client, world, media=[theirs["id"]])
    assert answer.status_code == 422 and answer.json["error"]["code"] == "unknown_media"


def test_a_link_given_in_a_post_is_fetched_into_the_library_through_the_egress_policy(app, client, world, httpserver):
    photo = jpeg_with_gps()
    httpserver.expect_request("/bread.jpg").respond_with_data(photo, content_type="image/jpeg")
    answer = _post(client, world, media=[httpserver.url_for("/bread.jpg")])
    assert answer.status_code == 201, answer.json
    [media_id] = answer.json["media"]
    item = client.get(f"/api/v1/media/{media_id}", headers=world.auth()).json
    assert item["kind"] == "image" and item["name"] == "bread.jpg"
    stored = download(client, world, media_id).data
    assert b"Test Camera" not in stored  # what is sent is what was checked: the stripped copy
    edited = client.patch(f"/api/v1/posts/{answer.json['id']}", headers=world.auth("marketer"),
                          json={"media": [media_id, httpserver.url_for("/bread.jpg")]})
    assert edited.status_code == 200 and len(edited.json["media"]) == 2 and edited.json["media"][0] == media_id


def test_a_link_to_a_refused_address_or_a_bad_file_fetches_nothing(app, client, world, httpserver, egress_allow):
    httpserver.expect_request("/page.jpg").respond_with_data("<html>hi</html>", content_type="image/jpeg")
    bad = _post(client, world, media=[httpserver.url_for("/page.jpg")])
    assert bad.status_code == 422 and bad.json["error"]["field"] == "media", bad.json
    missing = _post(client, world, media=[httpserver.url_for("/nothing.jpg")])
    assert missing.status_code == 422 and missing.json["error"]["code"] == "fetch_failed", missing.json
    egress_allow("")
    refused = _post(client, world, media=[httpserver.url_for("/page.jpg")])
    assert refused.status_code == 422, refused.json
    assert refused.json["error"]["field"] == "media"
    assert _count(app) == 0
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Post)) == 0


def test_media_can_be_fetched_by_url_into_the_library(app, client, world, httpserver):
    httpserver.expect_request("/pic.png").respond_with_data(png_bytes(), content_type="image/png")
    answer = client.post("/api/v1/media", headers=world.auth(), json={"url": httpserver.url_for("/pic.png"),
                                                                      "alt": "Green"})
    assert answer.status_code == 201, answer.json
    assert (answer.json["mime"], answer.json["alt"], answer.json["name"]) == ("image/png", "Green", "pic.png")
