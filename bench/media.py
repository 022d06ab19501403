"""What media cost: checking and storing a 20-megapixel JPEG and a 50 MB video, and preparing the photo for a network.

    .venv/bin/python bench/media.py [ROUNDS]

A synthetic 20-megapixel photo (5472×3648, a gradient under gaussian noise, JPEG quality 92,
with EXIF and GPS) and a 50 MB MP4 (its boxes, then 50 MB of media data) are made once. Each
step runs ROUNDS times (default 3) in a fresh child process, which reports its time and its
peak resident memory above what the process held before the step (``VmHWM``):

- *check*: ``models.media.content.inspect`` (Pillow decodes every pixel once, strips the EXIF
  and GPS segments; the video's boxes walked and its length read by mutagen);
- *prepare*: the photo prepared for a Bluesky-like rule (at most 1,000,000 bytes and 2,000 px
  a side), which is what a send to such a network does the first time (a retry reads the kept copy);
- *prepare the video*: what a send to X (chunked upload) does with it: ``prepared_media`` for X's
  rules, which re-encodes no video and reads the stored file back whole;
- *upload*: ``POST /api/v1/media`` through the app on SQLite (the request, the check, the
  write to the media folder and the row), each in a fresh child process too (memory: what the
  request added once the app was up).

Writes the "Media" section of docs/benchmarks.md (the median of the rounds).
"""

from common import machine, make_app, migrate, write_section

import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 3
SIZE = (5472, 3648)
VIDEO_BYTES = 50 * 1024 * 1024


def photo() -> bytes:
    base = Image.linear_gradient("L").resize(SIZE)
    noise = Image.effect_noise(SIZE, 24)
    image = Image.merge("RGB", (Image.blend(base, noise, 0.35), Image.blend(base.rotate(180), noise, 0.3),
                                Image.blend(base.transpose(Image.Transpose.FLIP_LEFT_RIGHT), noise, 0.4)))
    exif = Image.Exif()
    exif[0x0110] = "Bench Camera"
    exif.get_ifd(0x8825).update({1: "N", 2: (48.0, 51.0, 24.0), 3: "E", 4: (2.0, 21.0, 3.0)})
    out = io.BytesIO()
    image.save(out, "JPEG", quality=92, exif=exif)
    return out.getvalue()


def video() -> bytes:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.media_files import mp4_bytes

    skeleton = mp4_bytes(width=1920, height=1080, seconds=42.0)
    return skeleton[:-72] + (8 + VIDEO_BYTES).to_bytes(4, "big") + b"mdat" + bytes(VIDEO_BYTES)


def high_water_kib() -> int:
    """This process's peak resident memory (VmHWM: unlike ``ru_maxrss``, not inherited across exec from the parent)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(step: str, path: str) -> None:
    """One step, measured in this process: prints seconds and the peak memory it added, in MiB."""
    from models.channels.providers.accepts import JPEG, PNG, ImageRule
    from models.media.content import inspect
    from models.media.preparing import prepare_image

    if step.startswith("upload"):
        return upload_child(path)
    data = Path(path).read_bytes()
    if step == "prepare-video":
        return prepare_video_child(data)
    before = high_water_kib()
    started = time.perf_counter()
    if step == "check":
        inspect(data)
    else:
        prepared, width, height, _ = prepare_image(data, ImageRule(formats=frozenset({JPEG, PNG}), max_bytes=1_000_000,
                                                                    max_side=2000, may_prepare=True))
        assert len(prepared) <= 1_000_000 and max(width, height) <= 2000
    seconds = time.perf_counter() - started
    peak = high_water_kib()
    print(json.dumps({"seconds": seconds, "added_mib": (peak - before) / 1024, "peak_mib": peak / 1024}))


def prepare_video_child(data: bytes) -> None:
    """The 50 MB video as a send to X gets it: stored, then ``prepared_media`` for X's rules (read back whole)."""
    import hashlib

    from models.channels.providers import x
    from models.media.preparing import prepared_media
    from models.media.storage import MediaStore
    from models.media.tables import Media

    with tempfile.TemporaryDirectory() as folder:
        store = MediaStore(folder)
        sha = store.put(data)
        item = Media(id=1, kind="video", mime="video/mp4", bytes=len(data), sha256=sha, width=1920, height=1080,
                     duration=42.0, alt="")
        del data
        before = high_water_kib()
        started = time.perf_counter()
        sent = prepared_media(item, x.accepts.media, store)
        seconds = time.perf_counter() - started
        assert not sent.prepared and hashlib.sha256(sent.data).hexdigest() == sha
        peak = high_water_kib()
    print(json.dumps({"seconds": seconds, "added_mib": (peak - before) / 1024, "peak_mib": peak / 1024}))


def upload_child(path: str) -> None:
    """One ``POST /api/v1/media`` of the file at ``path`` through the app on SQLite, in this fresh process."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.media_files import multipart

    data = Path(path).read_bytes()
    body, content_type = multipart(data, Path(path).name)
    del data
    with tempfile.TemporaryDirectory() as folder:
        client, token = upload_app(folder)
        before = high_water_kib()
        started = time.perf_counter()
        answer = client.post("/api/v1/media", data=body, content_type=content_type,
                             headers={"Authorization": f"Bearer {token}"})
        seconds = time.perf_counter() - started
        assert answer.status_code == 201, answer.get_data(as_text=True)[:300]
        peak = high_water_kib()
    print(json.dumps({"seconds": seconds, "added_mib": (peak - before) / 1024, "peak_mib": peak / 1024}))


def upload_app(folder: str):
    """A migrated SQLite app with a workspace and an admin's API token: its test client and the token."""
    from models.accounts.tables import Membership, User, Workspace
    from models.accounts.tokens import issue_token
    from models.core.database import write_session
    from models.core.runtime import runtime

    migrate(f"sqlite:///{folder}/bench.db")
    app = make_app(f"sqlite:///{folder}/bench.db", TICKWORK_MEDIA_DIR=f"{folder}/media",
                   TICKWORK_API_RATE_LIMIT="100000 per minute")
    with app.app_context(), write_session() as session:
        now = runtime().now()
        workspace = Workspace(name="Bench", timezone="UTC", created_at=now)
        user = User(email="bench@example.test", created_at=now, password_hash="x")
        session.add_all([workspace, user])
        session.flush()
        session.add(Membership(user_id=user.id, workspace_id=workspace.id, role="admin"))
        token = issue_token(session, user, workspace, now)
    return app.test_client(), token


def measured(step: str, path: Path) -> dict:
    runs = []
    for _ in range(ROUNDS):
        out = subprocess.run([sys.executable, __file__, "--child", step, str(path)], capture_output=True, text=True,
                             check=True)
        runs.append(json.loads(out.stdout))
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        photo_path, video_path = Path(folder) / "photo.jpg", Path(folder) / "video.mp4"
        photo_path.write_bytes(photo())
        video_path.write_bytes(video())
        photo_size, video_size = photo_path.stat().st_size, video_path.stat().st_size
        figures = {"photo check": measured("check", photo_path), "photo prepare": measured("prepare", photo_path),
                   "video check": measured("check", video_path),
                   "video prepare": measured("prepare-video", video_path),
                   "photo upload": measured("upload", photo_path), "video upload": measured("upload", video_path)}
    rows = [
        f"| check a 20 MP JPEG ({photo_size / 1e6:.1f} MB): decode, strip EXIF and GPS | "
        f"{figures['photo check']['seconds'] * 1000:.0f} ms | {figures['photo check']['added_mib']:.0f} MiB |",
        f"| prepare it for a network of 1,000,000 bytes and 2,000 px | "
        f"{figures['photo prepare']['seconds'] * 1000:.0f} ms | {figures['photo prepare']['added_mib']:.0f} MiB |",
        f"| check a 50 MB MP4 ({video_size / 1e6:.1f} MB): its boxes, its length | "
        f"{figures['video check']['seconds'] * 1000:.0f} ms | {figures['video check']['added_mib']:.0f} MiB |",
        f"| prepare it for a send to X (no re-encoding: the stored file read back whole) | "
        f"{figures['video prepare']['seconds'] * 1000:.0f} ms | {figures['video prepare']['added_mib']:.0f} MiB |",
        f"| `POST /api/v1/media` of the photo (SQLite, through the app) | "
        f"{figures['photo upload']['seconds'] * 1000:.0f} ms | {figures['photo upload']['added_mib']:.0f} MiB |",
        f"| `POST /api/v1/media` of the video (SQLite, through the app) | "
        f"{figures['video upload']['seconds'] * 1000:.0f} ms | {figures['video upload']['added_mib']:.0f} MiB |",
    ]
    load = os.getloadavg()[0]
    body = (f"`bench/media.py`, {machine()}, load average {load:.0f} while it ran (the box is shared: times "
            f"on an idle one are lower), the median of {ROUNDS} rounds, each step in a fresh process "
            "(memory: the peak resident size the step added). A JPEG is decoded at a reduced scale when "
            "it is prepared smaller (Pillow's `draft`), so preparing costs less memory than checking, which "
            "decodes every pixel once.\n\n| step | time | memory added |\n|---|---|---|\n" + "\n".join(rows))
    print(body)
    write_section("Media", body)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
