"""What is live now: the scene's meshes that Implicit Skinning evaluates, and whether this code runs on Blender's
main thread (a render started from the interface runs its handlers on a thread of its own)."""
from __future__ import annotations

import threading


def live_meshes(scene) -> list:
    """The scene's meshes with Implicit Skinning on and not playing a bake."""
    return [obj for obj in scene.objects
            if obj.type == 'MESH' and obj.implicit_skin.enabled and not obj.implicit_skin.baked]


def on_main_thread() -> bool:
    """True on Blender's main thread (a render started from the interface runs its handlers on its own thread)."""
    return threading.current_thread() is threading.main_thread()
