"""The demo's figures from the shots' records (``shots.py``), with matplotlib (Agg): contact sheets, the crease
close-up, and per shot a plot of each muscle's volume, of the skin over the probe muscle and of the time by stage.

Every function takes one shot's record (a dict from the child's JSON) and the output folder and returns the path
it wrote. Nothing here talks to Blender.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

COLUMN_LABELS = {"dqs": "dual quaternions", "implicit": "Implicit Skinning", "muscles": "Implicit Skinning + muscles",
                 "rod": "+ muscles, the biceps a rod"}
"""The crease close-up's panel titles, by copy."""
STAGE_COLOURS = {"read": "#bbbbbb", "pbd": "#d95f02", "pose": "#7570b3", "field": "#e7298a", "tracking": "#1b9e77",
                 "write": "#666666"}
STAGE_NAMES = {"read": "pose read", "pbd": "PBD (muscle axes)", "pose": "DQS", "field": "field update",
               "tracking": "tracking + ARAP", "write": "write"}


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _image(path):
    plt = _pyplot()
    return plt.imread(str(path))


def contact_sheet(shot: dict, out_dir: Path, dpi: int) -> Path:
    """Rows: the shot's sheet frames; each row one render of the three copies and the distance column (labelled under
    them)."""
    plt = _pyplot()
    rows = shot["rows"]
    first = _image(rows[0]["file"])
    h, w = first.shape[:2]
    scale = 1.0 / dpi
    fig = plt.figure(figsize=(w * scale * 1.06, (h * len(rows) + 70) * scale), dpi=dpi)
    for k, row in enumerate(rows):
        ax = fig.add_axes([0.06, 1.0 - (k + 1) * h / (h * len(rows) + 70), 0.94, h / (h * len(rows) + 70)])
        ax.imshow(_image(row["file"]))
        ax.set_xticks([])
        ax.set_yticks([])
        for side in ax.spines.values():
            side.set_visible(False)
        fig.text(0.03, 1.0 - (k + 0.5) * h / (h * len(rows) + 70), f"frame {row['frame']}", rotation=90,
                 ha="center", va="center", fontsize=11)
    fig.text(0.5, 30 * scale / ((h * len(rows) + 70) * scale), shot["title"], ha="center", va="center",
             fontsize=12)
    path = out_dir / f"{shot['name']}_sheet.png"
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def crease(shot: dict, out_dir: Path, dpi: int) -> Path:
    """The joint's inner side at the crease frame, one panel per copy."""
    plt = _pyplot()
    files = shot["crease"]["files"]
    fig, axes = plt.subplots(1, len(files), figsize=(3.3 * len(files), 3.6), dpi=dpi, constrained_layout=True)
    for ax, item in zip(axes, files):
        ax.imshow(_image(item["file"]))
        ax.set_title(COLUMN_LABELS[item["kind"]], fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"The elbow's inner side at frame {shot['crease']['frame']} (130 degrees), seen from the side",
                 fontsize=11)
    path = out_dir / f"{shot['name']}_crease.png"
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def volume_ratios(shot: dict) -> dict:
    """Muscle name -> ``(frames,)`` volume in % of its rest volume."""
    return {name: 100.0 * np.asarray(v) / shot["rest_volumes"][name] for name, v in shot["volumes"].items()}


def curves(shot: dict, out_dir: Path, dpi: int) -> Path:
    """Panels over the shot's frames: each muscle's volume (% of rest, paper Fig. 13), the skin over the probe
    muscle (median distance from the DQS copy [mm], Implicit Skinning with and without muscles), the skin quality
    when the shot measured it, the skin over each fat when the shot has fats (median distance from the Implicit
    Skinning copy [mm]) (share of faces outside the creases turned by more than 45 degrees against the DQS
    copy, ``core/skin/quality.py``), and the muscles copy's time per frame by stage [ms]."""
    plt = _pyplot()
    frames = np.asarray(shot["frames"])
    quality = shot.get("quality") or {}
    fats = {name: f for name, f in (shot.get("fats") or {}).items() if f["vertices"]}
    rows = 3 + bool(quality) + bool(fats)
    fig, axes = plt.subplots(rows, 1, figsize=(9.0, 3.2 * rows), dpi=dpi, sharex=True, constrained_layout=True)
    vol, skin, time = axes[0], axes[1], axes[-1]
    if fats:
        soft = axes[-2]
        for name, f in fats.items():
            soft.plot(frames, f["skin_vs_implicit_mm"], lw=1.4, label=f"{name} ({f['vertices']} vertices)")
        soft.set_ylabel("distance [mm]")
        soft.set_title("Soft tissue: the skin over each fat, median distance from the Implicit Skinning copy")
        soft.legend(fontsize=8, frameon=False)
    if quality:
        turned = axes[2]
        for kind, colour, label in (("implicit", "#2166ac", "Implicit Skinning"),
                                    ("muscles", "#b2182b", "Implicit Skinning + muscles")):
            if kind in quality:
                turned.plot(frames, 100 * np.asarray(quality[kind]["turned_outside_creases"]), color=colour,
                            lw=1.6, label=f"{label}, outside creases")
                turned.plot(frames, 100 * np.asarray(quality[kind]["turned"]), color=colour, lw=0.8, ls=":",
                            label=f"{label}, all faces")
        turned.axhline(0.5, color="k", lw=0.6, ls="--", label="target 0.5 %")
        turned.set_ylabel("faces turned > 45 deg [%]")
        turned.set_title("Skin quality: faces whose normal turns by more than 45 degrees against the DQS copy")
        turned.legend(fontsize=7, frameon=False, ncol=2)
    ratios = volume_ratios(shot)
    colours = plt.get_cmap("tab20")(np.linspace(0, 1, max(len(ratios), 2)))
    for (name, r), colour in zip(ratios.items(), colours):
        vol.plot(frames, r, lw=1.4, color=colour, label=name)
    if "rod" in shot:  # the copy with the probe muscle as a rod: that muscle's volume
        name = shot["probe"]["muscle"]
        r = 100.0 * np.asarray(shot["rod"]["volumes"][name]) / shot["rod"]["rest_volumes"][name]
        vol.plot(frames, r, lw=1.4, color="#1b7837", ls="--", label=f"{name} as a rod (VIPER)")
        ratios = {**ratios, "rod": r}
    vol.axhline(100.0, color="k", lw=0.6)
    low = min(97.0, min(float(r.min()) for r in ratios.values()) - 0.5)
    high = max(103.0, max(float(r.max()) for r in ratios.values()) + 0.5)
    vol.set_ylim(low, high)
    vol.set_ylabel("muscle volume [% of rest]")
    vol.set_title("Each muscle's volume (the region f_M < 0 of its simulated axis), paper Fig. 13")
    vol.legend(fontsize=7, ncol=4 if len(ratios) > 6 else 2, frameon=False, loc="lower left")
    probe = shot["probe"]
    skin.plot(frames, probe["muscles_vs_dqs_mm"], color="#b2182b", lw=1.6, label="Implicit Skinning + muscles")
    skin.plot(frames, probe["implicit_vs_dqs_mm"], color="#2166ac", lw=1.6, label="Implicit Skinning")
    if "rod_vs_dqs_mm" in probe:
        skin.plot(frames, probe["rod_vs_dqs_mm"], color="#1b7837", lw=1.6,
                  label=f"+ muscles, {probe['muscle']} a rod (VIPER)")
    if "muscles_vs_implicit_mm" in probe:
        skin.plot(frames, probe["muscles_vs_implicit_mm"], color="#b2182b", lw=1.2, ls="--",
                  label="the muscles' own effect: + muscles against Implicit Skinning")
    skin.set_ylabel("distance [mm]")
    skin.set_title(f"Skin over {probe['muscle']} ({probe['vertices']} vertices): median distance from the DQS copy")
    notes = shot.get("notes", {})
    if "loose_frames" in notes:  # the bands are named in the skin panel's legend, so no label sits on a curve
        for (a, b), text in ((notes["loose_frames"], "stiffness 0.1 (loose)"), (notes["tense_frames"],
                                                                                "stiffness 0.9 (tense)")):
            colour = "#fdae61" if "loose" in text else "#abd9e9"
            for ax in axes:
                ax.axvspan(a, b, color=colour, alpha=0.18, lw=0, label=text if ax is skin else None)
        low, high = skin.get_ylim()
        skin.set_ylim(low, low + 1.45 * (high - low))
        skin.legend(fontsize=8, frameon=False, ncol=2, loc="upper center")
    else:
        skin.legend(fontsize=8, frameon=False)
    stages = [k for k in STAGE_COLOURS if k in shot["stages_ms"]]
    stack = np.array([shot["stages_ms"][k] for k in stages])
    time.stackplot(frames, stack, colors=[STAGE_COLOURS[k] for k in stages],
                   labels=[STAGE_NAMES[k] for k in stages], alpha=0.9)
    time.plot(frames, shot["implicit_total_ms"], color="k", lw=1.0, ls="--", label="Implicit Skinning alone (core)")
    time.set_ylim(0.0, float(np.percentile(stack.sum(axis=0), 98)) * 1.4 + 1e-3)
    time.set_ylabel("ms per frame")
    time.set_xlabel("frame")
    time.set_title("Time per frame by stage, the muscles copy (the first frame also settles the muscles)")
    time.legend(fontsize=7, ncol=3, frameon=False, loc="upper right")
    for ax in axes:
        ax.grid(alpha=0.3)
    path = out_dir / f"{shot['name']}_curves.png"
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
