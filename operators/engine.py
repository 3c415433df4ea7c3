"""Operators about the muscle engine: compile the kernels, report the engine status."""
import time

import bpy
from bpy.types import Operator

from ..blender.engine import compile_job, numba_setup


class IMPLICIT_MUSCLES_OT_compile_kernels(Operator):
    """Compile every muscle kernel that Bind, playback and Bake use, in the background (Blender stays usable); in
    background mode, here and now"""
    bl_idname = "implicit_muscles.compile_kernels"
    bl_label = "Compile Muscle Kernels"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context):
        if numba_setup.status.error:
            cls.poll_message_set(numba_setup.status.error)
            return False
        if compile_job.status.running:
            cls.poll_message_set(f"The muscle kernels are compiling ({compile_job.status.done}/"
                                 f"{compile_job.status.total})")
            return False
        return True

    def execute(self, context):
        if not bpy.app.background:
            try:
                compile_job.start()
            except OSError as ex:
                self.report({'ERROR'}, numba_setup.kernels_failed(f"the compile processes could not start ({ex})"))
                return {'CANCELLED'}
            self.report({'INFO'}, f"Compiling the muscle kernels in the background (0/{compile_job.status.total}); "
                                  f"Blender stays usable meanwhile.")
            return {'FINISHED'}
        start = time.perf_counter()
        try:
            from ..core.io import kernel_cache  # heavy (numba): imported on first use, not at enable
            result = kernel_cache.warm_up()
        except Exception as ex:
            self.report({'ERROR'}, numba_setup.kernels_failed(f"{type(ex).__name__}: {ex}"))
            return {'CANCELLED'}
        seconds = float(result.get("seconds", time.perf_counter() - start))
        self.report({'INFO'}, numba_setup.kernels_ready(bool(result.get("compiled")), seconds))
        return {'FINISHED'}


class IMPLICIT_MUSCLES_OT_report_status(Operator):
    """Report the muscle engine's problem, if any, in the status bar and the Info log"""
    bl_idname = "implicit_muscles.report_status"
    bl_label = "Report Muscle Engine Status"
    bl_options = {'INTERNAL'}

    @classmethod
    def poll(cls, context):
        status = numba_setup.status
        if not (status.error or status.numba_version):
            cls.poll_message_set("The muscle engine has not been set up: enable the Implicit Muscles add-on")
            return False
        return True

    def execute(self, context):
        if numba_setup.status.error:
            self.report({'ERROR'}, f"Implicit Muscles: {numba_setup.status.error}")
        elif numba_setup.status.warning:
            self.report({'WARNING'}, f"Implicit Muscles: {numba_setup.status.warning}")
        else:
            self.report({'INFO'}, f"Implicit Muscles: numba {numba_setup.status.numba_version} ready")
        return {'FINISHED'}


classes = (
    IMPLICIT_MUSCLES_OT_compile_kernels,
    IMPLICIT_MUSCLES_OT_report_status,
)

register, unregister = bpy.utils.register_classes_factory(classes)
