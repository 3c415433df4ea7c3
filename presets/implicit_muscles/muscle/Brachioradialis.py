# Implicit Muscles shape preset: Brachioradialis (long, belly near the elbow).
import bpy
muscle = bpy.context.object.implicit_muscles.active_muscle

muscle.alpha_rest = 3
muscle.beta_rest = 5
muscle.alpha_active = 4
muscle.beta_active = 6
muscle.eccentricity_rest = 0.3
muscle.eccentricity_active = 0.4
muscle.stiffness = 0.4
muscle.fibres = 1
muscle.origin_spread = 0.0
muscle.insertion_spread = 0.0
