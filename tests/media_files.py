"""Media files made for the tests: real images (with EXIF and GPS where it matters), a GIF, a small MP4, a bomb."""

import functools
import io
import random
import struct

from PIL import Image

GPS_IFD = 0x8825


def jpeg_with_gps(size=(64, 48), orientation: int | None = None) -> bytes:
    """A JPEG whose EXIF holds a camera model and a GPS position (and an orientation, if given)."""
    image = Image.new("RGB", size, (200, 120, 40))
    exif = Image.Exif()
    exif[0x0110] = "Test Camera"  # Model
    if orientation:
        exif[0x0112] = orientation
    exif.get_ifd(GPS_IFD).update({1: "N", 2: (48.0, 51.0, 24.0), 3: "E", 4: (2.0, 21.0, 3.0)})
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif, quality=90)
    return out.getvalue()


def png_bytes(size=(40, 30), text: str | None = "secret comment") -> bytes:
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    if text:
        info.add_text("Comment", text)
    out = io.BytesIO()
    Image.new("RGBA", size, (10, 200, 30, 255)).save(out, "PNG", pnginfo=info)
    return out.getvalue()


def gif_bytes(size=(20, 20), frames: int = 3) -> bytes:
    images = [Image.new("P", size, color) for color in range(frames)]
    out = io.BytesIO()
    images[0].save(out, "GIF", save_all=True, append_images=images[1:], duration=100, loop=0)
    return out.getvalue()


@functools.lru_cache(maxsize=None)
def bomb_png() -> bytes:
    """A small PNG that claims 100 megapixels: more than Pillow's decompression-bomb limit."""
    out = io.BytesIO()
    Image.new("1", (10_000, 10_000)).save(out, "PNG", optimize=True)
    return out.getvalue()


def noisy_jpeg(size=(2400, 1800), quality: int = 95, seed: int = 7) -> bytes:
    """A photo-like JPEG that compresses badly (noise), so a few megapixels weigh megabytes."""
    rng = random.Random(seed)
    noise = Image.frombytes("L", size, rng.randbytes(size[0] * size[1]))
    image = Image.merge("RGB", (noise, noise.rotate(90, expand=False), noise.transpose(Image.FLIP_LEFT_RIGHT)))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


def _box(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I4s", 8 + len(body), kind) + body


def mp4_bytes(width: int = 320, height: int = 240, seconds: float = 2.5) -> bytes:
    """The skeleton of an MP4: ftyp, and a moov with its movie header and one video track header."""
    timescale = 1000
    mvhd = _box(b"mvhd", struct.pack(">BxxxIIII", 0, 0, 0, timescale, int(seconds * timescale)) + bytes(80))
    tkhd = _box(b"tkhd", struct.pack(">BxxxIIIII", 0, 0, 0, 1, 0, int(seconds * timescale)) + bytes(52)
                + struct.pack(">II", width << 16, height << 16))
    hdlr = _box(b"hdlr", bytes(4) + bytes(4) + b"vide" + bytes(12) + b"video\x00")
    mdhd = _box(b"mdhd", struct.pack(">BxxxIIIIHH", 0, 0, 0, timescale, int(seconds * timescale), 0, 0))
    trak = _box(b"trak", tkhd + _box(b"mdia", mdhd + hdlr))
    ftyp = _box(b"ftyp", b"isom" + struct.pack(">I", 512) + b"isomiso2mp41")
    return ftyp + _box(b"moov", mvhd + trak) + _box(b"mdat", bytes(64))


def multipart(file: bytes, name: str = "photo.jpg", **fields: str) -> tuple[bytes, str]:
    """A multipart/form-data body with ``file`` and ``fields``, and its content type.

    Built here rather than by the test client, which spools a large body to a temporary file it
    leaves open.
    """
    boundary = "tickwork-test-boundary-7d3f"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
             for key, value in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
                 f"Content-Type: application/octet-stream\r\n\r\n".encode() + file + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"
