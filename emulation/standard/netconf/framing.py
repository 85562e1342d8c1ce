"""RFC 6242 message framing on an SSH channel: end-of-message (``]]>]]>``, NETCONF 1.0 and
every hello) and chunked framing (``\\n#<size>\\n...\\n##\\n``, NETCONF 1.1)."""

from __future__ import annotations

import re
from typing import Protocol

from southbound.standard.netconf.encoding import MAX_MESSAGE_BYTES

END_OF_MESSAGE = b"]]>]]>"
MAX_CHUNK = 4294967295
_CHUNK_HEADER = re.compile(rb"\n#([1-9][0-9]{0,9})\n")
_RECV = 65536


class FramingError(ValueError):
    """The peer broke the framing (or sent too much); the session ends."""


class Channel(Protocol):
    def recv(self, nbytes: int) -> bytes: ...

    def sendall(self, data: bytes) -> None: ...


class Framer:
    """Reads and writes whole messages on ``channel``; ``chunked`` after a 1.1 hello."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel
        self._buffer = b""
        self.chunked = False

    def _fill(self) -> None:
        data = self._channel.recv(_RECV)
        if not data:
            raise EOFError("the peer closed the channel")
        self._buffer += data
        if len(self._buffer) > MAX_MESSAGE_BYTES + 64:
            raise FramingError(f"message exceeds {MAX_MESSAGE_BYTES} bytes")

    def read(self) -> bytes:
        """The next message; EOFError when the peer closed, FramingError when it broke framing."""
        return self._read_chunked() if self.chunked else self._read_end_of_message()

    def _read_end_of_message(self) -> bytes:
        while (end := self._buffer.find(END_OF_MESSAGE)) < 0:
            self._fill()
        message, self._buffer = self._buffer[:end], self._buffer[end + len(END_OF_MESSAGE):]
        return message

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        size = 0
        while True:
            while len(self._buffer) < 4:
                self._fill()
            if self._buffer.startswith(b"\n##\n"):
                self._buffer = self._buffer[4:]
                if not parts:
                    raise FramingError("end-of-chunks with no chunk")
                return b"".join(parts)
            match = _CHUNK_HEADER.match(self._buffer)
            if match is None:
                if len(self._buffer) >= 13 or not self._buffer.startswith(b"\n#"):
                    raise FramingError(f"bad chunk header {self._buffer[:13]!r}")
                self._fill()
                continue
            length = int(match.group(1))
            if length > MAX_CHUNK or size + length > MAX_MESSAGE_BYTES:
                raise FramingError(f"chunk of {length} bytes too large")
            start = match.end()
            while len(self._buffer) < start + length:
                self._fill()
            parts.append(self._buffer[start:start + length])
            size += length
            self._buffer = self._buffer[start + length:]

    def write(self, message: bytes) -> None:
        if self.chunked:
            self._channel.sendall(b"\n#%d\n" % len(message) + message + b"\n##\n")
        else:
            self._channel.sendall(message + END_OF_MESSAGE)
