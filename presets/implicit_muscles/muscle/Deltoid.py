# Implicit Muscles shape preset: Deltoid (three fibres fanning from the shoulder girdle).
import bpy
muscle = bpy.context.object.implicit_muscles.active_muscle

muscle.alpha_rest = 3
muscle.beta_rest = 3
muscle.alpha_active = 4
muscle.beta_active = 5
muscle.eccentricity_rest = 0.6
muscle.eccentricity_active = 0.6
muscle.stiffness = 0.5
muscle.fibres = 3
muscle.origin_spread = 0.08
muscle.insertion_spread = 0.01
