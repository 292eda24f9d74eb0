"""Length-prefixed frames over pipes: read with a deadline (``FrameReader``), or cut from
bytes as they arrive without ever blocking (``FrameBuffer``)."""

from __future__ import annotations

import os
import select
import struct
import time
from typing import IO, BinaryIO

_HEADER = struct.Struct("!I")
MAX_FRAME = 64 * 1024 * 1024


class FrameTimeout(Exception):
    pass


class FrameEOF(Exception):
    pass


def write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def read_frame(stream: BinaryIO) -> bytes | None:
    """Blocking read of one frame; None at a clean end of stream."""
    header = stream.read(_HEADER.size)
    if not header:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) != size:
        return None
    return data


class FrameReader:
    """Reads frames from a file descriptor, giving up at a monotonic deadline."""

    def __init__(self, fd: int):
        self._fd = fd
        self._buffer = bytearray()

    def _fill(self, need: int, deadline: float) -> None:
        while len(self._buffer) < need:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise FrameTimeout
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if not ready:
                raise FrameTimeout
            chunk = os.read(self._fd, max(65536, need - len(self._buffer)))
            if not chunk:
                raise FrameEOF
            self._buffer += chunk

    def read(self, deadline: float) -> bytes:
        self._fill(_HEADER.size, deadline)
        (size,) = _HEADER.unpack_from(self._buffer)
        if size > MAX_FRAME:
            raise FrameEOF  # a corrupt or hostile channel: treat the process as dead
        self._fill(_HEADER.size + size, deadline)
        payload = bytes(self._buffer[_HEADER.size : _HEADER.size + size])
        del self._buffer[: _HEADER.size + size]
        return payload


class FrameTooLarge(Exception):
    pass


class FrameBuffer:
    """Frames cut from bytes as they arrive: ``feed`` what was read, then ``next`` gives
    each complete frame. Never blocks and never waits for a frame to complete, so the
    caller's deadline holds while a frame is half sent; a header announcing more than the
    caller's limit raises FrameTooLarge at once, before the bytes are held."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def pending(self) -> int:
        """Bytes held that are not yet a complete frame (or not yet taken)."""
        return len(self._buffer)

    def next(self, limit: int) -> bytes | None:
        if len(self._buffer) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self._buffer)
        if size > limit:
            raise FrameTooLarge(size)
        end = _HEADER.size + size
        if len(self._buffer) < end:
            return None
        payload = bytes(self._buffer[_HEADER.size : end])
        del self._buffer[:end]
        return payload
