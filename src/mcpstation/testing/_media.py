"""Tiny, valid media files built in code, so the demo server ships no binary assets."""

from __future__ import annotations

import io
import math
import struct
import wave
import zlib

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def red_square_png(size: int = 8) -> bytes:
    """A `size`×`size` opaque red PNG (8-bit RGB, no interlace)."""
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    scanline = b"\x00" + b"\xff\x00\x00" * size  # filter byte 0, then RGB pixels
    return (
        PNG_SIGNATURE
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(scanline * size))
        + _png_chunk(b"IEND", b"")
    )


def beep_wav(duration_s: float = 0.05, frequency_hz: float = 440.0, rate_hz: int = 8000) -> bytes:
    """A short mono 8-bit PCM sine tone as a WAV file."""
    frames = bytes(
        128 + int(100 * math.sin(2 * math.pi * frequency_hz * i / rate_hz)) for i in range(int(duration_s * rate_hz))
    )
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(1)
        wav.setframerate(rate_hz)
        wav.writeframes(frames)
    return buffer.getvalue()
