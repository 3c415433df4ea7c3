"""Bake, merge and clear the point caches of bound meshes (the work is in ``blender/session/bake.py``).

In the UI the bake is modal: a timer steps it one frame at a time with a progress bar and the frame in the status
bar; ESC stops it and writes nothing. From scripts and in background mode ``execute`` runs it to the end. Bake and
Merge Bake need a bound mesh with Implicit Skinning on in the scene, and wait while a bake runs (their ``poll``).
"""
from __future__ import annotations

import bpy
from bpy.props import BoolProperty, IntProperty
from bpy.types import Operator

from ..blender.engine import compile_job
from ..blender.session import bake


_running = set()
"""The modal bakes running now (at most one): Bake and Merge Bake wait for it."""


def _range(op, scene):
    first = op.frame_start if op.properties.is_property_set("frame_start") else scene.frame_start
    last = op.frame_end if op.properties.is_property_set("frame_end") else scene.frame_end
    return first, last


def _can_bake(cls, context) -> bool:
    """The ``poll`` of Bake and Merge Bake: no bake running, and a mesh to bake in the scene."""
    if _running:
        cls.poll_message_set("A bake is running: wait for it to finish, or press Esc to stop it")
        return False
    waiting = compile_job.waiting()
    if waiting:
        cls.poll_message_set(f"{waiting}: bake when they are ready")
        return False
    scene = context.scene
    if scene is None or not any(bake.is_target(obj) for obj in scene.objects):
        cls.poll_message_set(bake.NO_TARGET)
        return False
    return True


def _report_done(op, files: dict, what: str) -> None:
    """Report what a bake or merge wrote (``what``, then the folder of ``files``), and each file that is not in
    its usual place."""
    folders = sorted({path.rpartition("/")[0] + "/" for path in files.values()})
    op.report({'INFO'}, " ".join([f"{what} {', '.join(folders)}.", *bake.notes(files)]))


class IMPLICIT_MUSCLES_OT_bake(Operator):
    """Bake the Implicit Skinning of every bound mesh in the scene to point caches next to the .blend file, played
    by a Mesh Cache modifier (renders and farms then need no add-on)"""
    bl_idname = "implicit_muscles.bake"
    bl_label = "Bake"
    bl_options = {'REGISTER'}

    frame_start: IntProperty(name="Start", default=1, description="First frame to bake (default: the scene's)")
    frame_end: IntProperty(name="End", default=250, description="Last frame to bake (default: the scene's)")
    part: BoolProperty(name="Part", default=False,
                       description="Bake one part of a longer range on a farm: write "
                                   "<mesh>_<hash>.<start>-<end>.pc2 and set nothing up (Merge Bake joins the parts)")

    _steps = None
    _timer = None

    poll = classmethod(_can_bake)

    def execute(self, context):
        first, last = _range(self, context.scene)
        try:
            files = bake.bake(context.scene, first, last, part=self.part)
        except ValueError as ex:
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        _report_done(self, files, f"Baked frames {first}-{last} of {len(files)} mesh(es) to")
        return {'FINISHED'}

    def invoke(self, context, event):
        scene = context.scene
        first, last = _range(self, scene)
        try:
            bake.check(scene, first, last)
            bake.bake_targets(scene)
        except ValueError as ex:
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        self.frame_start, self.frame_end = first, last
        self._steps = bake.bake_steps(scene, first, last, part=self.part)
        wm = context.window_manager
        wm.progress_begin(0, last - first + 1)
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        _running.add(self.as_pointer())
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        if event.type == 'ESC':
            self.cancel(context)
            self.report({'WARNING'}, "Bake cancelled: nothing was written.")
            return {'CANCELLED'}
        if event.type != 'TIMER':
            return {'RUNNING_MODAL'}
        try:
            done, total = next(self._steps)
        except StopIteration as stop:
            self._finish(context)
            _report_done(self, stop.value, f"Baked frames {self.frame_start}-{self.frame_end} of "
                                           f"{len(stop.value)} mesh(es) to")
            return {'FINISHED'}
        except ValueError as ex:
            self._finish(context)
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        except BaseException:
            self._finish(context)
            raise
        context.window_manager.progress_update(done)
        context.workspace.status_text_set(f"Baking Implicit Skinning: frame {self.frame_start + done - 1} "
                                          f"({done}/{total}), Esc to cancel")
        return {'RUNNING_MODAL'}

    def cancel(self, context):
        """Esc, or Blender ending the bake (a file loaded, the window closed): write nothing, keep an earlier
        bake."""
        self._steps.close()
        self._finish(context)

    def _finish(self, context):
        _running.discard(self.as_pointer())
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)


class IMPLICIT_MUSCLES_OT_bake_merge(Operator):
    """Join the bake parts of a frame range (baked on a farm) into one point cache per mesh and play it"""
    bl_idname = "implicit_muscles.bake_merge"
    bl_label = "Merge Bake"
    bl_options = {'REGISTER'}

    frame_start: IntProperty(name="Start", default=1, description="First frame of the whole bake")
    frame_end: IntProperty(name="End", default=250, description="Last frame of the whole bake")
    keep_parts: BoolProperty(name="Keep Parts", default=False, description="Keep the part files after merging")

    poll = classmethod(_can_bake)

    def execute(self, context):
        first, last = _range(self, context.scene)
        try:
            files = bake.merge(context.scene, first, last, keep_parts=self.keep_parts)
        except ValueError as ex:
            self.report({'ERROR'}, str(ex))
            return {'CANCELLED'}
        _report_done(self, files, f"Merged the parts of {len(files)} mesh(es), frames {first}-{last}, into")
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_clear_bake(Operator):
    """Play the live Implicit Skinning again instead of the bake (the bake file is kept)"""
    bl_idname = "implicit_muscles.clear_bake"
    bl_label = "Clear Bake"
    bl_options = {'REGISTER', 'UNDO'}

    all_meshes: BoolProperty(name="All Meshes", default=False, description="Clear every baked mesh of the scene")

    @classmethod
    def poll(cls, context):
        obj = context.object
        if obj is None or obj.type != 'MESH' or not obj.implicit_skin.baked:
            cls.poll_message_set("Select a baked mesh")
            return False
        return True

    def execute(self, context):
        meshes = ([o for o in context.scene.objects if o.type == 'MESH' and o.implicit_skin.baked]
                  if self.all_meshes else [context.object])
        for obj in meshes:
            bake.clear(obj)
        context.scene.frame_set(context.scene.frame_current)
        self.report({'INFO'}, f"Live Implicit Skinning again on {len(meshes)} mesh(es).")
        return {'FINISHED'}


classes = (IMPLICIT_MUSCLES_OT_bake, IMPLICIT_MUSCLES_OT_bake_merge, IMPLICIT_MUSCLES_OT_clear_bake)

register, unregister = bpy.utils.register_classes_factory(classes)
