"""Where media files live: content-addressed under ``TICKWORK_MEDIA_DIR``, one file per sha256.

``<dir>/<first two hex digits>/<sha256>``. A file is written to a temporary name and
renamed into place, so a reader never sees half a file, and writing the same content twice
is harmless. Prepared variants (an image downscaled for one network's rules) are kept under
``<dir>/prepared/`` by the sha256 of the original and the rules, so a retry or a second
channel of the same kind does not prepare the same image again. On several hosts the folder
is storage every host mounts, like the archive folder.
"""

import hashlib
import os
import tempfile
from pathlib import Path


class MediaStore:
    """The media folder."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def path(self, sha256: str) -> Path:
        if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
            raise ValueError(f"not a sha256: {sha256[:80]!r}")
        return self.root / sha256[:2] / sha256

    def put(self, data: bytes) -> str:
        """Store ``data`` (if not stored already) and answer its sha256."""
        sha256 = hashlib.sha256(data).hexdigest()
        target = self.path(sha256)
        if not target.exists():
            _write_atomically(target, data)
        return sha256

    def read(self, sha256: str) -> bytes:
        return self.path(sha256).read_bytes()

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).exists()

    def remove(self, sha256: str) -> None:
        self.path(sha256).unlink(missing_ok=True)

    def prepared_path(self, key: str) -> Path:
        return self.root / "prepared" / key[:2] / key

    def read_prepared(self, key: str) -> bytes | None:
        try:
            return self.prepared_path(key).read_bytes()
        except FileNotFoundError:
            return None

    def put_prepared(self, key: str, data: bytes) -> None:
        _write_atomically(self.prepared_path(key), data)


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
