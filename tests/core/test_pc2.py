"""Point Cache 2 files (``core/io/pc2.py``): the layout Blender's Mesh Cache modifier reads, writing frame by frame,
merging farm parts, and plain errors for files that do not fit together."""
import struct

import numpy as np
import pytest

from implicit_muscles.core.io import pc2


def _frames(samples, points=5, seed=0):
    return np.random.default_rng(seed).normal(size=(samples, points, 3)).astype(np.float32)


def _write(path, start, frames):
    w = pc2.PC2Writer(path, frames.shape[1], start, len(frames))
    for f in frames:
        w.write(f)
    return w.close()


def test_layout_is_the_point_cache_2_format(tmp_path):
    frames = _frames(3)
    path = _write(tmp_path / "a.pc2", 7, frames)
    raw = path.read_bytes()
    assert raw[:12] == b"POINTCACHE2\0"
    assert struct.unpack("<iiffi", raw[12:32]) == (1, 5, 7.0, 1.0, 3)
    assert len(raw) == 32 + 3 * 5 * 12
    np.testing.assert_array_equal(np.frombuffer(raw[32:], dtype="<f4").reshape(3, 5, 3), frames)
    start, back = pc2.read(path)
    assert start == 7.0 and np.array_equal(back, frames)


def test_parts_merge_into_the_single_file_in_any_order(tmp_path):
    frames = _frames(10)
    single = _write(tmp_path / "single.pc2", 1, frames)
    a = _write(tmp_path / "p.000006-000010.pc2", 6, frames[5:])
    b = _write(tmp_path / "p.000001-000005.pc2", 1, frames[:5])
    merged = pc2.merge([a, b], tmp_path / "merged.pc2")
    assert merged.read_bytes() == single.read_bytes()


def test_gaps_overlaps_and_foreign_parts_are_refused(tmp_path):
    frames = _frames(10)
    a = _write(tmp_path / "a.pc2", 1, frames[:4])
    gap = _write(tmp_path / "gap.pc2", 6, frames[5:])
    overlap = _write(tmp_path / "overlap.pc2", 4, frames[3:])
    other = _write(tmp_path / "other.pc2", 5, _frames(6, points=4))
    with pytest.raises(ValueError, match="leaves a gap"):
        pc2.merge([a, gap], tmp_path / "out.pc2")
    with pytest.raises(ValueError, match="overlaps"):
        pc2.merge([a, overlap], tmp_path / "out.pc2")
    with pytest.raises(ValueError, match="different meshes"):
        pc2.merge([a, other], tmp_path / "out.pc2")
    earlier = _write(tmp_path / "bake.pc2", 1, frames)
    with pytest.raises(ValueError, match="cover frames 1-4, not 1-10: bake the missing frames first"):
        pc2.merge([a], earlier, 1, 10)
    assert pc2.read(earlier)[1].shape == (10, 5, 3)  # an earlier complete bake is not overwritten
    earlier.unlink()
    with pytest.raises(ValueError, match="no bake parts"):
        pc2.merge([], tmp_path / "out.pc2")
    assert not (tmp_path / "out.pc2").exists()


def test_an_interrupted_bake_leaves_the_earlier_file(tmp_path):
    earlier = _write(tmp_path / "bake.pc2", 1, _frames(2))
    before = earlier.read_bytes()
    w = pc2.PC2Writer(tmp_path / "bake.pc2", 5, 1, 4)
    w.write(_frames(1)[0])
    w.abort()
    assert earlier.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["bake.pc2"]
    w = pc2.PC2Writer(tmp_path / "bake.pc2", 5, 1, 4)
    w.write(_frames(1)[0])
    with pytest.raises(ValueError, match="stopped after 1 of 4 frames"):
        w.close()
    assert earlier.read_bytes() == before


def test_bad_frames_and_files_get_plain_errors(tmp_path):
    w = pc2.PC2Writer(tmp_path / "x.pc2", 5, 1, 1)
    with pytest.raises(ValueError, match="needs 5 x 3 positions"):
        w.write(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="non-finite"):
        w.write(np.full((5, 3), np.nan))
    w.abort()
    with pytest.raises(ValueError, match="at least one point"):
        pc2.PC2Writer(tmp_path / "y.pc2", 0, 1, 1)
    (tmp_path / "short.pc2").write_bytes(b"POINTCACHE2\0")
    with pytest.raises(ValueError, match="too short"):
        pc2.read_header(tmp_path / "short.pc2")
    path = _write(tmp_path / "cut.pc2", 1, _frames(2))
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(ValueError, match="incomplete"):
        pc2.read(path)
    (tmp_path / "not.pc2").write_bytes(b"x" * 40)
    with pytest.raises(ValueError, match="not a PC2"):
        pc2.read_header(tmp_path / "not.pc2")
