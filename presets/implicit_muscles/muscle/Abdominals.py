# Implicit Muscles shape preset: Abdominals (flat sheet).
import bpy
muscle = bpy.context.object.implicit_muscles.active_muscle

muscle.alpha_rest = 3
muscle.beta_rest = 3
muscle.alpha_active = 3
muscle.beta_active = 4
muscle.eccentricity_rest = 0.9
muscle.eccentricity_active = 0.9
muscle.stiffness = 0.6
muscle.fibres = 1
muscle.origin_spread = 0.0
muscle.insertion_spread = 0.0
