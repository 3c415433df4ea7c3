"""Long-run stability, reduced: the arm's biceps curl for 10 loops (480 frames) and the full body for 3
loops (144 frames), simulated without a break. ``make bench`` runs 10,000 frames of each (bench/long_run.py,
bench/bench_long_run.py) and reports the same numbers."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import long_run  # noqa: E402

VOLUME_DRIFT = 0.03
"""Largest change of a muscle's volume over the run, from the second loop to the last."""
VOLUME_VS_REST = 0.05
"""Largest difference of a muscle's volume from rest at any of these loops: the volume law holds for straight axes
and bending costs a little (paper §8.2 quotes < 3 % for 60 degrees)."""
ENERGY_GROWTH = 1.5
"""Largest ratio of the last loop's peak kinetic energy to the peak of loops 2-4: a periodic animation settles
into periodic motion; a solver gaining energy grows without bound."""
MEMORY_GROWTH_MB = 20.0
"""Largest growth of resident memory from the end of the second loop to the end [MB]: per-frame allocations are
freed, up to the allocator's and numba's own noise (a leak of one (V, 3) array per frame on the body is 70 MB)."""


@pytest.mark.parametrize("scene,loops", [("arm", 10), ("body", 3)])
def test_a_long_loop_stays_finite_bounded_and_keeps_its_volume(scene, loops, record_property):
    character, poses = getattr(long_run, f"{scene}_scene")()
    result = long_run.run(character, poses, loops * long_run.LOOP)
    for key in ("energy_growth", "volume_drift", "volume_vs_rest_max", "memory_growth_mb"):
        record_property(f"{scene}_{key}", result[key])
    print(f"{scene}: {result['frames']} frames, energy growth {result['energy_growth']:.3f}, volume drift "
          f"{100 * result['volume_drift']:.2f} % (vs rest {100 * result['volume_vs_rest_max']:.2f} %), memory "
          f"growth {result['memory_growth_mb']:.1f} MB")
    assert result["finite"]
    assert result["energy_growth"] < ENERGY_GROWTH
    assert result["volume_drift"] < VOLUME_DRIFT
    assert result["volume_vs_rest_max"] < VOLUME_VS_REST
    assert result["memory_growth_mb"] < MEMORY_GROWTH_MB
