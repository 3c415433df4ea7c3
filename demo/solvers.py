"""The two muscle solvers side by side on the paper's arm, from the core alone: the biceps curl and the
arm shake played twice, the biceps on the paper's axis solver and as a VIPER rod (the other three muscles on the
axis), into one plot: the biceps' field volume (% of rest) and the skin over the biceps (its height above the
rest skin, in the upper arm's frame, mean over the vertices over the belly) per frame. Run it alone:
``.venv/b50/bin/python demo/solvers.py [out.png]`` (default ``out/demo/solvers.png``); it prints the numbers."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FRAMES = 48
SHAKE_FRAMES = 72
"""The shake: 24 frames of shaking, then 48 held still (the jiggle)."""
SOLVERS = {"axis (paper)": None, "rod (VIPER)": ["ROD", "AXIS", "AXIS", "AXIS"]}
PROBE_RADIUS = 0.04
"""[m] Vertices over the biceps' belly: within this of its middle along the arm, on its side (+z), within 35 degrees
of the top."""


def _probe(rest):
    x = rest[:, 0]
    angle = np.degrees(np.arctan2(np.abs(rest[:, 1]), rest[:, 2]))
    return np.flatnonzero((np.abs(x - 0.2) < PROBE_RADIUS) & (rest[:, 2] > 0.0) & (angle < 35.0))


def play(solvers, shot):
    """``(volume % of rest (frames,), skin height over the biceps [mm] (frames,))`` of ``shot`` ('curl' or
    'shake') with ``solvers`` per arm muscle."""
    from implicit_muscles.core.pbd.control import MuscleInputs
    from implicit_muscles.scenes import paper as scenes

    arm = scenes.arm_character(solvers=solvers)
    rest = arm.model.rig.vertices
    probe = _probe(rest)
    arm.frame(scenes.arm_pose(0.0), dt=1 / 24)
    rest_volume = arm.muscle_volumes()[0]
    arm.reset()
    frames = FRAMES if shot == "curl" else SHAKE_FRAMES
    if shot == "shake":
        arm.settle(scenes.arm_shake(0), MuscleInputs(stiffness=[0.1] * 4))
    volume, height = [], []
    for f in range(frames):
        bones, inputs = scenes.arm_shot_frame(shot, f, FRAMES)
        x = arm.frame(bones, inputs, dt=1 / 24)
        local = (np.linalg.inv(bones[0]) @ np.concatenate([x[probe], np.ones((len(probe), 1))], 1).T).T[:, :3]
        height.append(1e3 * float(np.mean(local[:, 2] - rest[probe, 2])))
        volume.append(100.0 * arm.muscle_volumes()[0] / rest_volume)
    return np.array(volume), np.array(height)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    sys.path.insert(0, str(REPO / "tools"))
    from pkgpath import make_importable
    make_importable("demo")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(argv[0]) if argv else REPO / "out" / "demo" / "solvers.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(2, 2, figsize=(11, 6.5), dpi=110)
    for row, (shot, title) in enumerate((("curl", "biceps curl (0 -> 130 -> 0 degrees, activation with the flexion)"),
                                         ("shake", "arm shake (4 Hz for 24 frames, then still; stiffness 0.1)"))):
        for label, solvers in SOLVERS.items():
            volume, height = play(solvers, shot)
            print(f"{shot}, biceps {label}: volume {volume.min():.2f}-{volume.max():.2f} % of rest, skin over the "
                  f"biceps {height.min():+.2f} to {height.max():+.2f} mm"
                  + (f", after the stop {np.ptp(height[24:]):.2f} mm of motion" if shot == "shake" else ""))
            axes[row, 0].plot(volume, label=f"biceps {label}")
            axes[row, 1].plot(height, label=f"biceps {label}")
        axes[row, 0].set_title(f"{title}\nbiceps field volume, % of rest", fontsize=9)
        axes[row, 1].set_title("skin over the biceps: height above rest [mm]", fontsize=9)
        for ax in axes[row]:
            ax.set_xlabel("frame (24 fps)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        if shot == "shake":
            for ax in axes[row]:
                ax.axvline(24, color="#999999", lw=0.8, ls="--")
    fig.tight_layout()
    fig.savefig(out)
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
