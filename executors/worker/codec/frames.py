"""Binary frames: the raw bytes of arrays, frames, Arrow buffers, bytes and images beside the
JSON of a message, never inside it as text; large ones through a shared-memory arena. Stdlib only.

A message whose value tree holds raw bytes (the codec leaves `bytes`/`bytearray`/`memoryview`
where a payload's buffer goes) is packed as a binary frame:

    word 0    0x80000000 | J      J: bytes of the JSON text (<= max_frame_bytes < 2**31)
    word 1    N | 0x80000000 if the blobs are in the arena     N: blobs (<= Bounds.blobs)
    u64       B                   bytes of the inline section (0 in the arena)
    N x 16    (offset u64, length u64) of each blob: in the inline section, or in the arena
    J bytes   the JSON, each blob in it as {"$t": "blob", "i": k}
    B bytes   the inline section

A plain frame (4-byte length + JSON) never has the top bit set. The receiver checks the table
before it allocates or reads anything: J, N and B against the bounds, every blob inside its
section, in order, not overlapping, their sum within `max_payload_bytes` (`Limits.max_payload_bytes`);
each blob is referenced once. Then the codec checks each payload's dtype and shape against its
blob (`data_values`).

The arena (`Arena`) is a memfd the host makes for each worker, sized to the payload limit (sparse:
it costs nothing until written), sealed against shrinking and growing before the worker gets it,
so no mapping of it can fault (SIGBUS) whatever the worker does. Its first KEEP_BYTES stay
allocated between messages, and each side maps them once (a shared mapping: not the worker's
RLIMIT_DATA) and copies blobs in and out of them with memcpy: shmem's read(2) and write(2) walk
the file a 4 KiB page at a time, at a third of memcpy's speed. Past them, the sender writes with
pwrite or short-lived mappings (page faults are not subject to RLIMIT_FSIZE, a pwrite past it
is), the receiver reads with preadv. Either way the receiver copies each blob out once into
memory of its own, so a worker that writes the arena again after sending changes nothing the
host holds; the host then frees the pages past KEEP_BYTES (MADV_REMOVE). Messages alternate, so
one arena serves both directions.
"""

from __future__ import annotations

import os
import sys

from .text import TAG, ProtocolError

__all__ = ["ARENA_MIN_BYTES", "Arena", "BinaryFrame", "FrameTooLarge", "Outgoing", "PayloadTooLarge", "blob_ref",
           "parse_binary_header", "split_binary"]

BINARY = 0x80000000
FIXED = 16  # word 0, word 1, u64 B
ENTRY = 16
ALIGN = 64  # inline blobs start on 64-byte boundaries (numpy's SIMD loops like aligned data)
INLINE_MAX = 255  # raw bytes up to this many cross as base64 text in the JSON: no table entry
ARENA_MIN_BYTES = 256 * 1024  # below this, the pipe is as fast as a mapping
KEEP_BYTES = 64 * 1024 * 1024  # arena pages a worker keeps between messages (Arena.free)
_WINDOW = 16 * 1024 * 1024  # mapping windows: a worker's RLIMIT_AS pays for 16 MiB, not the blob


class FrameTooLarge(ProtocolError):
    pass


class PayloadTooLarge(FrameTooLarge):
    """Blobs over the payload limit (the message names Limits.max_payload_bytes)."""


def payload_limit_text(total: int, limit: int) -> str:
    return (f"binary payloads of {total:,} bytes in one message, over the {limit:,} the host "
            "takes (Limits.max_payload_bytes)")


def blob_ref(k: int) -> dict:
    return {TAG: "blob", "i": k}


class Outgoing:
    """A packed message with blobs, not yet laid out: `render(arena)` gives the bytes to write
    (the blobs written to `arena` first when there is one and they are large)."""

    __slots__ = ("json", "blobs", "total")

    def __init__(self, json: bytes, blobs: list) -> None:
        self.json = json
        self.blobs = blobs
        self.total = sum(len(b) for b in blobs)

    def render(self, arena: Arena | None = None) -> bytes:
        n = len(self.blobs)
        if arena is not None and self.total >= ARENA_MIN_BYTES:
            table = arena.write(self.blobs)
            return _head(len(self.json), n | BINARY, 0, table) + self.json
        table, pos = [], 0
        for b in self.blobs:
            pos = -(-pos // ALIGN) * ALIGN
            table.append((pos, len(b)))
            pos += len(b)
        parts = [_head(len(self.json), n, pos, table), self.json]
        end = 0
        for (off, length), b in zip(table, self.blobs, strict=True):
            if off > end:
                parts.append(bytes(off - end))
            parts.append(b)
            end = off + length
        return b"".join(parts)

    def __bytes__(self) -> bytes:
        return self.render(None)


def _head(j: int, word1: int, b: int, table) -> bytes:
    out = bytearray((BINARY | j).to_bytes(4, "big") + word1.to_bytes(4, "big") + b.to_bytes(8, "big"))
    for off, length in table:
        out += off.to_bytes(8, "big") + length.to_bytes(8, "big")
    return bytes(out)


class BinaryFrame:
    """A binary frame read whole: the JSON, the blob table, the inline section (or None: the arena)."""

    __slots__ = ("json", "table", "inline")

    def __init__(self, json: bytes, table: list, inline) -> None:
        self.json, self.table, self.inline = json, table, inline

    def __len__(self) -> int:  # (what a frame's size is measured by)
        return len(self.json)

    def blobs(self, arena: Arena | None, limit: int) -> list:
        """Each blob as memory of the receiver's own, after checking the table (ProtocolError)."""
        total, end, size = 0, 0, len(self.inline) if self.inline is not None else None
        if size is None:
            if arena is None:
                raise ProtocolError("a frame with blobs in a shared-memory arena, but this link has none")
            size = arena.size
        for off, length in self.table:
            if off < end or off + length > size:
                raise ProtocolError(f"a blob at {off:,}+{length:,} is outside its section "
                                    f"({size:,} bytes) or overlaps the one before it")
            end = off + length
            total += length
        if total > limit:
            raise PayloadTooLarge(payload_limit_text(total, limit))
        if self.inline is not None:
            view = memoryview(self.inline)
            return [view[off:off + length] for off, length in self.table]
        return [arena.read(off, length) for off, length in self.table]


def parse_binary_header(head: bytes, max_frame_bytes: int, max_blobs: int, max_payload: int) -> tuple[int, int, int, bool]:
    """(J, N, B, in arena) from the first 16 bytes, each checked (ProtocolError / PayloadTooLarge)."""
    j = int.from_bytes(head[0:4], "big") & ~BINARY
    word1 = int.from_bytes(head[4:8], "big")
    n, in_arena = word1 & ~BINARY, bool(word1 & BINARY)
    b = int.from_bytes(head[8:16], "big")
    if j > max_frame_bytes:
        raise FrameTooLarge(f"incoming frame of {j} bytes exceeds the {max_frame_bytes}-byte limit")
    if n > max_blobs:
        raise ProtocolError(f"a frame with {n:,} blobs, over the {max_blobs:,} a message may hold (Bounds.blobs)")
    if b > max_payload + n * ALIGN or (in_arena and b):
        raise PayloadTooLarge(payload_limit_text(b, max_payload))
    return j, n, b, in_arena


def split_binary(buf: bytearray, start: int, j: int, n: int, in_arena: bool) -> BinaryFrame:
    """The binary frame in `buf` from `start` (after its 16 fixed bytes) as a BinaryFrame: the
    table and JSON read, the inline section copied once (no view of `buf` stays exported)."""
    with memoryview(buf) as view:
        table = [(int.from_bytes(view[i:i + 8], "big"), int.from_bytes(view[i + 8:i + 16], "big"))
                 for i in range(start, start + n * ENTRY, ENTRY)]
        at = start + n * ENTRY
        json = bytes(view[at:at + j])
    inline = None if in_arena else buf[at + j:]
    return BinaryFrame(json, table, inline)


def _empty(n: int):
    """n bytes of the receiver's own, not zeroed where numpy is loaded (zeroing 100 MB costs as
    much as copying it), else a bytearray."""
    np = sys.modules.get("numpy")
    if np is not None and type(getattr(np, "empty", None)) is not type(None):
        try:
            return np.empty(n, dtype=np.uint8)
        except Exception:  # noqa: BLE001 - a numpy that cannot: the stdlib's buffer
            pass
    return bytearray(n)


class Arena:
    """A shared-memory arena (see the module docstring): a sealed memfd of `size` bytes."""

    __slots__ = ("fd", "size", "used", "_page", "_map", "_kept")

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size
        self.used: list[tuple[int, int]] = []  # ranges written or read since the last free()
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._map = self._kept = None  # the mapping of the kept pages, made at first use

    def kept(self) -> memoryview | None:
        """The first KEEP_BYTES (or the whole arena, if smaller), mapped once: a byte view.
        None where the mapping is refused (then read(2)/write(2) serve)."""
        if self._kept is None and self.fd >= 0 and self._map is None:
            import mmap

            try:
                self._map = mmap.mmap(self.fd, min(KEEP_BYTES, self.size))
            except (OSError, ValueError):
                self._map = False
                return None
            try:  # (a process this one forks has no business with the arena)
                self._map.madvise(mmap.MADV_DONTFORK)
            except (AttributeError, OSError):
                pass
            self._kept = memoryview(self._map)
        return self._kept

    @classmethod
    def create(cls, size: int) -> Arena:
        """The host's arena for one worker: sparse, sealed against shrinking and growing."""
        import fcntl

        fd = os.memfd_create("codeagent-payloads", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(fd, size)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, size)

    def write(self, blobs: list) -> list[tuple[int, int]]:
        """Lay `blobs` out from offset 0, page-aligned; their table. PayloadTooLarge past the end."""
        table, pos = [], 0
        for b in blobs:
            pos = -(-pos // self._page) * self._page
            table.append((pos, len(b)))
            pos += len(b)
        if pos > self.size:
            raise PayloadTooLarge(payload_limit_text(pos, self.size))
        kept = self.kept()
        for (off, length), b in zip(table, blobs, strict=True):
            src = memoryview(b).cast("B")
            n = 0 if kept is None else max(0, min(length, len(kept) - off))
            if n:
                kept[off:off + n] = src[:n]
            if n < length:
                self._put(src[n:], off + n)
        self.used.extend(table)
        return table

    def _put(self, src: memoryview, off: int) -> None:
        """pwrite first (no mapping, no faults through one); where RLIMIT_FSIZE stops it (a
        worker's max_file_mb), the rest through short-lived mappings, which it does not limit."""
        import mmap

        done, length = 0, len(src)
        try:
            while done < length:
                done += os.pwritev(self.fd, [src[done:done + _WINDOW * 4]], off + done)
        except OSError:  # EFBIG past RLIMIT_FSIZE: map the rest (page-aligned windows)
            done = done // self._page * self._page
        for start in range(done, length, _WINDOW):
            part = src[start:start + _WINDOW]
            with mmap.mmap(self.fd, len(part), offset=off + start) as m:
                m[:] = part

    def read(self, off: int, length: int) -> bytearray:
        """A copy of the arena's bytes [off, off + length): the receiver's own memory."""
        out = _empty(length)
        view, kept = memoryview(out).cast("B"), self.kept()
        done = 0 if kept is None else max(0, min(length, len(kept) - off))
        if done:
            view[:done] = kept[off:off + done]
        while done < length:
            got = os.preadv(self.fd, [view[done:]], off + done)
            if got <= 0:
                raise ProtocolError("a blob past the end of the arena")
            done += got
        self.used.append((off, length))
        return out

    def free(self) -> None:
        """Give back the pages of everything written or read past the first KEEP_BYTES
        (MADV_REMOVE punches them out): those stay, so moderate payloads do not fault fresh
        pages in every time, and a worker never holds more than that between messages."""
        import mmap

        used, self.used = self.used, []
        if not used:
            return
        low = max(KEEP_BYTES, min(off for off, _ in used) // self._page * self._page)
        high = min(self.size, max(off + n for off, n in used))
        for start in range(low, high, _WINDOW):
            size = min(_WINDOW, high - start)
            try:
                with mmap.mmap(self.fd, size, offset=start) as m:
                    m.madvise(mmap.MADV_REMOVE)
            except (OSError, ValueError, AttributeError):
                return

    def close(self) -> None:
        kept, mapping, self._kept, self._map = self._kept, self._map, None, False
        if kept is not None:
            kept.release()
        if mapping:
            try:
                mapping.close()
            except BufferError:  # (a view of it still held: it goes with its last reference)
                pass
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)
