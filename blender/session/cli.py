"""Command line for farms: ``blender --command implicit_muscles_bake FILE.blend [options]`` (Blender 4.2+).

    blender -c implicit_muscles_bake shot.blend                      # bake the scene's range, set up, save
    blender -c implicit_muscles_bake shot.blend --frames 51-100 --part  # one part of a farm bake (no save)
    blender -c implicit_muscles_bake shot.blend --frames 1-100 --merge  # join the parts, set up, save

A whole bake or a merge saves the .blend so that it plays the Mesh Cache (renders then need no add-on); ``--part``
only writes its part file, so parts can run at the same time on different machines. Each part simulates the
muscles from the start frame, so the merged parts equal one bake of the whole range. The same is reachable from a
script: ``bpy.ops.implicit_muscles.bake(frame_start=1, frame_end=100)`` (see docs/farm.md). Exit status 0 on
success, 1 with one plain line on standard error otherwise.
"""
from __future__ import annotations

import argparse
import sys
import time

import bpy

from . import bake

COMMAND = "implicit_muscles_bake"

_handle = None


def parse_frames(text: str) -> tuple:
    """``"51-100"`` -> ``(51, 100)``; ``"7"`` -> ``(7, 7)``; ``ValueError`` otherwise."""
    parts = text.split("-") if not text.startswith("-") else [text]
    try:
        if len(parts) == 1:
            return int(parts[0]), int(parts[0])
        if len(parts) == 2:
            return int(parts[0]), int(parts[1])
    except ValueError:
        pass
    raise ValueError(f"--frames takes a range like 1-100 or one frame like 7, not {text!r}.")


def _parser():
    p = argparse.ArgumentParser(prog=f"blender --command {COMMAND}", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("blendfile", help="the .blend file to bake")
    p.add_argument("--frames", help="frame range FIRST-LAST (default: the scene's)")
    p.add_argument("--scene", help="scene name (default: the file's active scene)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--part", action="store_true", help="bake one part of a farm bake; sets nothing up")
    mode.add_argument("--merge", action="store_true", help="join the parts of --frames into one bake")
    p.add_argument("--no-save", action="store_true", help="do not save the .blend after a bake or merge")
    return p


def main(argv) -> int:
    """Run the command on ``argv`` (the arguments after the command id); returns the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as ex:  # --help or a usage error, already printed by argparse
        return int(ex.code or 0)
    try:
        bpy.ops.wm.open_mainfile(filepath=args.blendfile)
        scene = bpy.data.scenes[args.scene] if args.scene else bpy.context.scene
        if scene is None:
            raise ValueError(f"{args.blendfile} has no scene named {args.scene!r}.")
        first, last = parse_frames(args.frames) if args.frames else (scene.frame_start, scene.frame_end)
        t0 = time.perf_counter()
        if args.merge:
            files = bake.merge(scene, first, last)
        else:
            files = bake.bake(scene, first, last, part=args.part)
        seconds = time.perf_counter() - t0
        if not args.part and not args.no_save:
            bpy.ops.wm.save_mainfile()
        what = "merged" if args.merge else "baked"
        for name, path in files.items():
            print(f"Implicit Muscles: {what} {name}, frames {first}-{last} -> {path}")
        for note in bake.notes(files):
            print(f"Implicit Muscles: {note}")
        print(f"Implicit Muscles: {what} {len(files)} mesh(es) in {seconds:.1f} s")
        return 0
    except (ValueError, KeyError, RuntimeError) as ex:
        print(f"Implicit Muscles: {ex}", file=sys.stderr)
        return 1


def register():
    global _handle
    if _handle is None and hasattr(bpy.utils, "register_cli_command"):
        _handle = bpy.utils.register_cli_command(COMMAND, main)


def unregister():
    global _handle
    if _handle is not None:
        bpy.utils.unregister_cli_command(_handle)
        _handle = None
