# Implicit Muscles shape preset: Dorsal (latissimus dorsi; paper text (1, 3), thesis e = 0.96).
import bpy
muscle = bpy.context.object.implicit_muscles.active_muscle

muscle.alpha_rest = 1
muscle.beta_rest = 3
muscle.alpha_active = 2
muscle.beta_active = 3
muscle.eccentricity_rest = 0.96
muscle.eccentricity_active = 0.96
muscle.stiffness = 0.5
muscle.fibres = 3
muscle.origin_spread = 0.2
muscle.insertion_spread = 0.03
