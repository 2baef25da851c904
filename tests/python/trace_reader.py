"""A small, independent reader of tracer stream files (proto/trace.proto),
written from the format's documentation only, so the tests check the
injected library's bytes without sharing code with the C++ reader.

Decodes the framing (magic, [u32 len][u32 crc32][Chunk]) and the Chunk fields
these tests need: header, string / thread / domain definitions, ranges (the
per-record messages of version 1 and the column batches of version 2) and
footer. Unknown fields are skipped, as protobuf readers do.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional

MAGIC = b"TRACER\x00\x01"
MAX_FRAME = 64 << 20


class TraceError(Exception):
    pass


def _varint(buf: bytes, pos: int):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise TraceError("varint runs past the end of its message")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise TraceError("varint longer than 10 bytes")


def decode_fields(buf: bytes) -> Dict[int, list]:
    """field number -> list of values (int for varint/fixed, bytes for
    length-delimited), in order of appearance."""
    fields: Dict[int, list] = {}
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            if pos + n > len(buf):
                raise TraceError("length-delimited field runs past its message")
            value = buf[pos : pos + n]
            pos += n
        elif wire == 5:
            value = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        else:
            raise TraceError(f"unsupported wire type {wire} for field {number}")
        fields.setdefault(number, []).append(value)
    return fields


def _packed(buf: bytes) -> List[int]:
    values, pos = [], 0
    while pos < len(buf):
        v, pos = _varint(buf, pos)
        values.append(v)
    return values


def _unzigzag(v: int) -> int:
    return (v >> 1) ^ -(v & 1)


def range_batch_rows(buf: bytes) -> List[Dict[int, list]]:
    """Rows of a RangeBatch (format version 2) as the fields of the Range
    message each stands for. Columns are packed varints, a missing one is all
    zeros; start and id are deltas to the previous row of the same thread."""
    f = decode_fields(buf)
    cols = {n: _packed(b"".join(v)) for n, v in f.items()}
    n = len(cols.get(1, []))
    cell = lambda c, i: cols[c][i] if i < len(cols.get(c, [])) else 0  # noqa: E731
    mask = (1 << 64) - 1
    previous: Dict[int, list] = {}
    self_parent = set(cols.get(16, []))
    rows = []
    for i in range(n):
        thread = cell(1, i)
        prev = previous.setdefault(thread, [0, 0])
        prev[0] = (prev[0] + _unzigzag(cell(2, i))) & mask
        prev[1] = (prev[1] + _unzigzag(cell(4, i))) & mask
        start, rid = prev
        offset = cell(5, i)
        parent = rid if i in self_parent else (0 if offset == 0 else (rid - offset) & mask)
        rows.append({1: [rid], 2: [parent], 3: [thread], 4: [cell(6, i)], 5: [cell(7, i)],
                     6: [cell(8, i)], 7: [start], 8: [(start + cell(3, i)) & mask],
                     9: [cell(9, i)], 10: [cell(10, i)],
                     11: [(thread + _unzigzag(cell(11, i))) & 0xFFFFFFFF],
                     12: [cell(12, i)], 13: [cell(13, i)]})
    return rows


def _one(fields: Dict[int, list], number: int, default=0):
    values = fields.get(number)
    return values[-1] if values else default


@dataclass
class Range:
    id: int
    parent_id: int
    thread: int
    name: str
    domain: int
    start_ns: int
    end_ns: int
    kind: int
    depth: int
    end_thread: int
    flags: int

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class Trace:
    header: Dict[int, list] = field(default_factory=dict)
    footer: Optional[Dict[int, list]] = None
    strings: Dict[int, str] = field(default_factory=lambda: {0: ""})
    threads: Dict[int, Dict[int, list]] = field(default_factory=dict)
    domains: Dict[int, str] = field(default_factory=dict)
    ranges: List[Range] = field(default_factory=list)
    frames: int = 0
    error: Optional[str] = None  # why reading stopped early, if it did

    @property
    def pid(self) -> int:
        return _one(self.header, 4)

    @property
    def parent_pid(self) -> int:
        return _one(self.header, 11)

    def thread_tid(self, thread_id: int) -> int:
        return _one(self.threads.get(thread_id, {}), 2)

    def names(self) -> set:
        return {r.name for r in self.ranges}


def read_trace(path: str) -> Trace:
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != MAGIC:
        raise TraceError(f"{path}: not a tracer stream (magic {data[:8]!r})")
    trace = Trace()
    pending = []  # raw ranges; names resolve once all strings are known
    pos = 8
    while pos < len(data):
        if pos + 8 > len(data):
            trace.error = f"torn frame header at byte {pos}"
            break
        length, crc = struct.unpack_from("<II", data, pos)
        if not 1 <= length <= MAX_FRAME or pos + 8 + length > len(data):
            trace.error = f"frame at byte {pos}: bad or cut length {length}"
            break
        payload = data[pos + 8 : pos + 8 + length]
        if zlib.crc32(payload) & 0xFFFFFFFF != crc:
            trace.error = f"frame at byte {pos}: CRC mismatch"
            break
        chunk = decode_fields(payload)
        pos += 8 + length
        trace.frames += 1
        if 1 in chunk:
            trace.header = decode_fields(chunk[1][-1])
        for raw in chunk.get(2, []):
            s = decode_fields(raw)
            trace.strings[_one(s, 1)] = _one(s, 2, b"").decode("utf-8", "replace")
        for raw in chunk.get(3, []):
            t = decode_fields(raw)
            trace.threads[_one(t, 1)] = t
        for raw in chunk.get(6, []):
            d = decode_fields(raw)
            trace.domains[_one(d, 1)] = _one(d, 2)
        pending.extend(decode_fields(raw) for raw in chunk.get(10, []))  # version 1
        for raw in chunk.get(22, []):  # version 2: RangeBatch
            pending.extend(range_batch_rows(raw))
        if 31 in chunk:
            trace.footer = decode_fields(chunk[31][-1])
    for r in pending:
        trace.ranges.append(
            Range(
                id=_one(r, 1),
                parent_id=_one(r, 2),
                thread=_one(r, 3),
                name=trace.strings.get(_one(r, 4), f"<string {_one(r, 4)}>"),
                domain=_one(r, 5),
                start_ns=_one(r, 7),
                end_ns=_one(r, 8),
                kind=_one(r, 9),
                depth=_one(r, 10),
                end_thread=_one(r, 11),
                flags=_one(r, 12),
            )
        )
    trace.domains = {k: trace.strings.get(v, "") for k, v in trace.domains.items()}
    return trace
