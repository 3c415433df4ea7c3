"""The "Muscles" tab in the 3D View sidebar: engine status (numba, kernels, errors in red)."""
import textwrap

import bpy
from bpy.types import Panel

from ..blender.engine import compile_job, numba_setup

LINE_WIDTH = 40
"""Characters per label line when wrapping long messages (labels do not wrap by themselves)."""


def wrapped(layout, text, icon):
    """Labels for a long message, one per line of at most LINE_WIDTH characters, the icon on the first."""
    for i, line in enumerate(textwrap.wrap(text, LINE_WIDTH)):
        layout.label(text=line, icon=icon if i == 0 else 'BLANK1')


def progress(layout, done: int, total: int) -> None:
    """The compile's progress: a bar where the layout has one (Blender 4.0+), else a label."""
    text = f"Compiling kernels {done}/{total}"
    if hasattr(layout, "progress"):
        layout.progress(factor=done / max(total, 1), type='BAR', text=text)
    else:
        layout.label(text=text, icon='TIME')


def draw_status_bar(self, context):
    """The compile's progress in the status bar while it runs."""
    job = compile_job.status
    if job.running:
        self.layout.label(text=f"Muscle kernels {job.done}/{job.total}", icon='TIME')


class IMPLICIT_MUSCLES_PT_status(Panel):
    """Muscle engine status"""
    bl_idname = "IMPLICIT_MUSCLES_PT_status"
    bl_label = "Engine"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Muscles"

    def draw(self, context):
        layout = self.layout
        status = numba_setup.status
        if status.error:
            col = layout.column(align=True)
            col.alert = True
            wrapped(col, status.error, 'ERROR')
            return
        layout.label(text=f"numba {status.numba_version}", icon='CHECKMARK')
        if status.warning:
            col = layout.column(align=True)
            col.alert = True
            wrapped(col, status.warning, 'ERROR')
        job = compile_job.status
        if job.running:
            col = layout.column(align=True)
            progress(col, job.done, job.total)
            note = compile_job.waiting()
            if note:
                wrapped(col, f"{note}: Bind waits for them and bound meshes show the Armature result meanwhile.",
                        'TIME')
        elif status.kernels_message:
            col = layout.column(align=True)
            col.alert = not status.kernels_compiled
            wrapped(col, status.kernels_message, 'CHECKMARK' if status.kernels_compiled else 'ERROR')
        else:
            layout.label(text="Kernels not compiled yet", icon='INFO')
        layout.operator("implicit_muscles.compile_kernels", icon='FILE_REFRESH')


classes = (
    IMPLICIT_MUSCLES_PT_status,
)

_register, _unregister = bpy.utils.register_classes_factory(classes)


def register():
    _register()
    bpy.types.STATUSBAR_HT_header.append(draw_status_bar)


def unregister():
    bpy.types.STATUSBAR_HT_header.remove(draw_status_bar)
    _unregister()
