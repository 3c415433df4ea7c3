"""Evaluation quality: Preview and Render are data passed with each frame
(``core/quality.py``); Preview gives the solvers fewer substeps, sweeps and iterations and a result close to
Render's, Render is the bound settings."""
import numpy as np
import pytest

from implicit_muscles.core.pbd.control import MuscleInputs
from implicit_muscles.core.quality import PREVIEW, RENDER, EvaluationQuality
from implicit_muscles.scenes import paper as scenes

FRAMES = 24
PREVIEW_MEDIAN_TOL = 1e-4
"""[m] Median over vertices and frames of the distance between the Preview and the Render skin, paper arm curl."""
PREVIEW_P99_TOL = 5e-3
"""[m] Its 99th percentile: Preview may differ at the few vertices whose tracking stops elsewhere (a contact)."""


def _curl(quality):
    """The arm's biceps curl at ``quality``: positions (frames, V, 3), ``(frames, 2)`` field evaluations and final
    ARAP sweeps per frame, the character."""
    arm = scenes.arm_character()
    out, evaluations = [], []
    for frame in range(FRAMES):
        bones, activation = scenes.biceps_curl(frame, frames=FRAMES)
        inputs = MuscleInputs(activation=activation, stiffness=[0.5] * 4)
        out.append(arm.frame(bones, inputs, dt=1 / 24, quality=quality).copy())
        evaluations.append((int(arm.deformer.scratch.evaluations.sum()), arm.deformer.last_sweeps))
    return np.array(out), np.array(evaluations), arm


@pytest.fixture(scope="module")
def curls():
    return _curl(RENDER), _curl(PREVIEW)


def test_preview_gives_the_core_fewer_steps_and_render_the_bound_settings():
    arm = scenes.arm_character()
    settings = arm.solver.model.settings
    render, preview = arm.solver.params(1 / 240, RENDER), arm.solver.params(1 / 240, PREVIEW)
    assert (render.n_sub, render.iterations) == (settings.substeps, settings.iterations) == (10, 4)
    assert (preview.n_sub, preview.iterations) == (10, 2)
    track, correction = arm.deformer._quality_structs(RENDER)
    assert track is arm.deformer._track_params and correction is arm.deformer._correction_mesh
    track, correction = arm.deformer._quality_structs(PREVIEW)
    assert len(track.lambdas) == 2 and track.final_sweeps == 2 and correction.sweeps == 2
    assert (len(arm.deformer._track_params.lambdas), arm.deformer._track_params.final_sweeps) == (4, 6)
    assert arm.deformer._quality_structs(PREVIEW)[0] is track  # built once


def test_preview_is_close_to_render_and_does_less_work(curls):
    (render, render_evals, _), (preview, preview_evals, _) = curls
    gap = np.linalg.norm(preview - render, axis=2)
    assert gap.max() > 1e-6  # another result
    assert np.median(gap) < PREVIEW_MEDIAN_TOL and np.percentile(gap, 99) < PREVIEW_P99_TOL
    assert np.isfinite(preview).all()
    assert preview_evals[:, 0].sum() < render_evals[:, 0].sum()  # fewer field evaluations
    assert preview_evals[:, 1].max() <= 2 < render_evals[:, 1].max()  # fewer final ARAP sweeps


def test_render_quality_is_the_default_bit_for_bit(curls):
    (render, _, _), _ = curls
    arm = scenes.arm_character()
    for frame in range(6):
        bones, activation = scenes.biceps_curl(frame, frames=FRAMES)
        x = arm.frame(bones, MuscleInputs(activation=activation, stiffness=[0.5] * 4), dt=1 / 24)
        assert np.array_equal(x, render[frame])


def test_quality_settings_are_checked():
    with pytest.raises(ValueError, match="substep_fraction"):
        EvaluationQuality(substep_fraction=0.0)
    with pytest.raises(ValueError, match="tracking_iterations"):
        EvaluationQuality(tracking_iterations=0)
    assert EvaluationQuality(substep_fraction=0.01).substeps(10) == 1
    assert EvaluationQuality(pbd_iterations=9).sweeps(4) == 4  # never more than the bound settings
    assert RENDER.is_render and not PREVIEW.is_render
