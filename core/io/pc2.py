"""Point Cache 2 (``.pc2``) files: the baked vertex positions that Blender's Mesh Cache modifier plays back.

Layout (little-endian): a 32-byte header ``b"POINTCACHE2\\0"``, int32 version 1, int32 point count, float32
start frame, float32 sample rate (frames per sample, 1 here), int32 sample count; then per sample the points'
``x, y, z`` as float32. Positions are in the mesh object's local space [m].

:class:`PC2Writer` writes a bake one frame at a time. :func:`merge` joins the *parts* of a farm bake (consecutive
frame ranges baked in separate processes) into the file of the whole range, byte-identical to a single bake of it.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

MAGIC = b"POINTCACHE2\0"
VERSION = 1
HEADER = struct.Struct("<12siiffi")
"""magic, version, point count, start frame, sample rate, sample count (32 bytes)."""


class PC2Writer:
    """Write ``samples`` frames of ``points`` vertices to ``path``, one :meth:`write` per frame, in order.

    The file is written to ``<path>.partial`` and renamed on :meth:`close` once every frame is in, so an
    interrupted bake never leaves a truncated cache where a Mesh Cache modifier would read it. :meth:`abort`
    removes the partial file.
    """

    def __init__(self, path, points: int, start_frame: int, samples: int):
        if points <= 0 or samples <= 0:
            raise ValueError(f"A point cache needs at least one point and one frame (got {points} points, "
                             f"{samples} frames).")
        self.path = Path(path)
        self.points, self.samples, self.written = int(points), int(samples), 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._partial = self.path.with_name(self.path.name + ".partial")
        self._file = open(self._partial, "wb")
        self._file.write(HEADER.pack(MAGIC, VERSION, self.points, float(start_frame), 1.0, self.samples))

    def write(self, positions) -> None:
        """Append one frame: ``positions (points, 3)`` [m], mesh local space."""
        p = np.asarray(positions)
        if p.shape != (self.points, 3):
            raise ValueError(f"A frame of this point cache needs {self.points} x 3 positions, got {p.shape}.")
        if self.written >= self.samples:
            raise ValueError(f"This point cache holds {self.samples} frames; all are written already.")
        if not np.isfinite(p).all():
            raise ValueError(f"Frame {self.written + 1} of the bake has non-finite positions.")
        self._file.write(np.ascontiguousarray(p, dtype="<f4").tobytes())
        self.written += 1

    def close(self) -> Path:
        """Finish the file (all frames written) and move it into place; returns its path."""
        self._file.close()
        if self.written != self.samples:
            self.abort()
            raise ValueError(f"The bake stopped after {self.written} of {self.samples} frames; nothing was saved.")
        os.replace(self._partial, self.path)
        return self.path

    def abort(self) -> None:
        """Stop without a file (ESC, an error): the partial file is removed, an earlier complete file is kept."""
        if not self._file.closed:
            self._file.close()
        self._partial.unlink(missing_ok=True)


def read_header(path) -> dict:
    """``{"points", "start_frame", "sample_rate", "samples"}`` of a PC2 file; ``ValueError`` if it is not one."""
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(HEADER.size)
    if len(head) < HEADER.size:
        raise ValueError(f"{path.name} is not a point cache (too short).")
    magic, version, points, start, rate, samples = HEADER.unpack(head)
    if magic != MAGIC:
        raise ValueError(f"{path.name} is not a PC2 point cache.")
    expected = HEADER.size + points * samples * 12
    if path.stat().st_size != expected:
        raise ValueError(f"{path.name} is incomplete: {path.stat().st_size} bytes where its header promises "
                         f"{expected}.")
    return {"points": points, "start_frame": start, "sample_rate": rate, "samples": samples}


def read(path) -> tuple:
    """``(start_frame, positions (samples, points, 3) float32)`` of a PC2 file."""
    head = read_header(path)
    data = np.fromfile(path, dtype="<f4", offset=HEADER.size)
    return head["start_frame"], data.reshape(head["samples"], head["points"], 3)


def merge(parts, path, first=None, last=None) -> Path:
    """Join part files (any order) covering consecutive frame ranges into one file at ``path``.

    The parts must have the same point count and together cover one range without gaps or overlaps, and exactly
    frames ``first..last`` when these are given; otherwise ``ValueError`` names the problem and nothing is written.
    """
    heads = sorted(((read_header(p), Path(p)) for p in parts), key=lambda hp: hp[0]["start_frame"])
    if not heads:
        raise ValueError("There are no bake parts to merge.")
    points = heads[0][0]["points"]
    expected = heads[0][0]["start_frame"]
    for head, p in heads:
        if head["points"] != points:
            raise ValueError(f"{p.name} has {head['points']} points where the other parts have {points}: they come "
                             f"from different meshes.")
        if head["start_frame"] != expected:
            what = "overlaps the part before it" if head["start_frame"] < expected else "leaves a gap before it"
            raise ValueError(f"{p.name} starts at frame {head['start_frame']:g} and {what} (expected frame "
                             f"{expected:g}).")
        expected = head["start_frame"] + head["samples"]
    start = heads[0][0]["start_frame"]
    total = int(expected - start)
    if (first is not None and start != first) or (last is not None and start + total - 1 != last):
        raise ValueError(f"The parts cover frames {start:g}-{start + total - 1:g}, not {first}-{last}: bake the "
                         f"missing frames first.")
    out = PC2Writer(path, points, int(start), total)
    try:
        for _, p in heads:
            _, frames = read(p)
            for frame in frames:
                out.write(frame)
    except BaseException:
        out.abort()
        raise
    return out.close()
