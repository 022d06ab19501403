"""What a file is, by its content alone: images through Pillow (with its decompression-bomb limit), GIFs and
videos by their container headers; and the image's bytes without EXIF, GPS or other metadata.

:func:`inspect` is the one door into the library. A file's name and the type a client
claims are never believed: a PNG named ``.jpg`` is stored as the PNG it is, and HTML named
``.jpg`` is refused.
"""

import io
import struct
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

from models.core.errors import InvalidInput
from models.media.tables import MediaKind

# Pillow's own default (about 89.5 megapixels): beyond it an image is treated as a decompression bomb.
MAX_PIXELS = Image.MAX_IMAGE_PIXELS
_IMAGE_FORMATS = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}
# PNG chunks that carry metadata (text, EXIF, time); dropping them leaves the pixels untouched.
_PNG_METADATA = {b"tEXt", b"zTXt", b"iTXt", b"eXIf", b"tIME"}
# JPEG markers kept: APP0 (JFIF), APP2 (ICC profile), APP14 (Adobe colour transform); other APPn and COM go.
_JPEG_KEPT_APP = {0xE0, 0xE2, 0xEE}


@dataclass(frozen=True)
class Inspected:
    """A file the library accepts: its kind, type and size, and the bytes to store."""

    kind: str
    mime: str
    data: bytes
    width: int | None = None
    height: int | None = None
    duration: float | None = None


def refuse(message: str, code: str = "bad_file") -> InvalidInput:
    return InvalidInput(message, field="file", code=code)


def inspect(data: bytes, *, max_pixels: int = MAX_PIXELS) -> Inspected:
    """The file ``data`` is, checked; raises InvalidInput on ``file`` for anything else."""
    if not data:
        raise refuse("the file is empty", "missing")
    head = data[:16]
    if head.startswith(b"GIF87a") or head.startswith(b"GIF89a"):
        return _gif(data, max_pixels)
    if head[4:8] == b"ftyp":
        return _video(data)
    if head.startswith((b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n")) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP"):
        return _image(data, max_pixels)
    raise refuse("the file is not an image (JPEG, PNG, WebP), a GIF or a video (MP4, QuickTime)", "unsupported_type")


def _open_checked(data: bytes, max_pixels: int) -> Image.Image:
    """The image, its header read and its size checked before any pixel is decoded."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise refuse("the image has too many pixels to decode safely (a decompression bomb)", "too_many_pixels") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise refuse("the file's content is not a readable image") from None
    width, height = image.size
    if width < 1 or height < 1 or width * height > max_pixels:
        raise refuse(f"the image is {width}×{height} pixels; at most {max_pixels:,} pixels are decoded "
                     "(a decompression bomb is refused)", "too_many_pixels")
    return image


def _decode(image: Image.Image) -> None:
    """Decode every pixel once, so a truncated or corrupt file is refused here, not at send time."""
    try:
        image.load()
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError):
        raise refuse("the image's data is damaged or truncated") from None


def _image(data: bytes, max_pixels: int) -> Inspected:
    image = _open_checked(data, max_pixels)
    mime = _IMAGE_FORMATS.get(image.format or "")
    if mime is None:
        raise refuse("the file is not an image (JPEG, PNG, WebP), a GIF or a video (MP4, QuickTime)",
                      "unsupported_type")
    if getattr(image, "n_frames", 1) > 1:
        raise refuse("animated PNG and WebP files are not taken; upload a GIF or a video", "unsupported_type")
    _decode(image)
    clean = strip_metadata(data, image)
    with Image.open(io.BytesIO(clean)) as stored:
        width, height = stored.size
    return Inspected(MediaKind.IMAGE.value, mime, clean, width, height)


def strip_metadata(data: bytes, image: Image.Image) -> bytes:
    """``data`` without EXIF (GPS included), XMP, comments or text chunks; the pixels untouched where possible.

    A JPEG loses its metadata segments and a PNG its metadata chunks, byte for byte; a JPEG
    whose EXIF turns it (orientation) is turned for real first, since the tag that turned it
    goes. WebP is re-encoded without its EXIF and XMP.
    """
    if image.format == "JPEG":
        orientation = image.getexif().get(0x0112, 1)
        if orientation not in (1, None):
            turned = ImageOps.exif_transpose(image)
            out = io.BytesIO()
            turned.save(out, "JPEG", quality=95, icc_profile=image.info.get("icc_profile"))
            return _jpeg_without_metadata(out.getvalue())
        return _jpeg_without_metadata(data)
    if image.format == "PNG":
        return _png_without_metadata(data)
    out = io.BytesIO()
    lossless = bool(image.info.get("lossless"))
    image.save(out, "WEBP", lossless=lossless, quality=100 if lossless else 90, exif=b"", xmp=b"",
               icc_profile=image.info.get("icc_profile"))
    return out.getvalue()


def _jpeg_without_metadata(data: bytes) -> bytes:
    out = bytearray(data[:2])
    position = 2
    while position + 4 <= len(data):
        if data[position] != 0xFF:
            raise refuse("the JPEG's structure is damaged")
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker == 0xDA:  # start of scan: the rest is image data
            out += data[position:]
            return bytes(out)
        (length,) = struct.unpack(">H", data[position + 2:position + 4])
        segment = data[position:position + 2 + length]
        if not ((0xE0 <= marker <= 0xEF and marker not in _JPEG_KEPT_APP) or marker == 0xFE):
            out += segment
        position += 2 + length
    raise refuse("the JPEG's structure is damaged")


def _png_without_metadata(data: bytes) -> bytes:
    out = bytearray(data[:8])
    position = 8
    while position + 12 <= len(data):
        (length,) = struct.unpack(">I", data[position:position + 4])
        chunk_type = data[position + 4:position + 8]
        end = position + 12 + length
        if chunk_type not in _PNG_METADATA:
            out += data[position:end]
        position = end
        if chunk_type == b"IEND":
            return bytes(out)
    raise refuse("the PNG's structure is damaged")


def _gif(data: bytes, max_pixels: int) -> Inspected:
    image = _open_checked(data, max_pixels)
    if image.format != "GIF":
        raise refuse("the file's content is not a readable GIF")
    try:
        frames = image.n_frames
        image.seek(0)
        image.load()
    except (OSError, EOFError, SyntaxError, ValueError):
        raise refuse("the GIF's data is damaged or truncated") from None
    if frames * image.size[0] * image.size[1] > max_pixels * 4:
        raise refuse(f"the GIF has {frames} frames of {image.size[0]}×{image.size[1]}; too many pixels to decode safely",
                     "too_many_pixels")
    width, height = image.size
    return Inspected(MediaKind.GIF.value, "image/gif", data, width, height)


# ISO base media brands: QuickTime's own, and the MP4 family.
_QUICKTIME_BRANDS = {b"qt  "}


def _video(data: bytes) -> Inspected:
    brand = data[8:12]
    mime = "video/quicktime" if brand in _QUICKTIME_BRANDS else "video/mp4"
    boxes = _boxes(data, 0, len(data))
    if not any(kind == b"moov" for kind, _, _ in boxes):
        raise refuse("the video has no 'moov' header (not an MP4 or QuickTime file, or cut short)")
    width, height = _track_size(data, boxes)
    return Inspected(MediaKind.VIDEO.value, mime, data, width, height, _duration(data))


def _boxes(data: bytes, start: int, end: int) -> list[tuple[bytes, int, int]]:
    """The ISO boxes between ``start`` and ``end``: (type, body start, body end)."""
    found = []
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack(">I4s", data[position:position + 8])
        header = 8
        if size == 1:
            if position + 16 > end:
                break
            (size,) = struct.unpack(">Q", data[position + 8:position + 16])
            header = 16
        elif size == 0:
            size = end - position
        if size < header or position + size > end:
            raise refuse("the video's container is damaged or cut short")
        found.append((kind, position + header, position + size))
        position += size
    return found


def _track_size(data: bytes, boxes) -> tuple[int | None, int | None]:
    """The first video track's width and height, from its ``tkhd`` box (16.16 fixed point)."""
    for kind, start, end in boxes:
        if kind == b"moov":
            for trak, trak_start, trak_end in _boxes(data, start, end):
                if trak != b"trak":
                    continue
                for tkhd, body, body_end in _boxes(data, trak_start, trak_end):
                    if tkhd == b"tkhd" and body_end - body >= 8:
                        width, height = struct.unpack(">II", data[body_end - 8:body_end])
                        if width and height:
                            return width >> 16, height >> 16
    return None, None


def _duration(data: bytes) -> float | None:
    """The video's length in seconds, as mutagen reads it from the container; None when it cannot."""
    from mutagen import MutagenError
    from mutagen.mp4 import MP4

    try:
        length = MP4(io.BytesIO(data)).info.length
    except (MutagenError, struct.error, ValueError, OSError):
        return None
    return round(float(length), 3) if length else None
