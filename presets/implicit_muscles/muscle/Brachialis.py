# Implicit Muscles shape preset: Brachialis (flat, under the biceps).
import bpy
muscle = bpy.context.object.implicit_muscles.active_muscle

muscle.alpha_rest = 2
muscle.beta_rest = 3
muscle.alpha_active = 3
muscle.beta_active = 5
muscle.eccentricity_rest = 0.4
muscle.eccentricity_active = 0.5
muscle.stiffness = 0.5
muscle.fibres = 1
muscle.origin_spread = 0.0
muscle.insertion_spread = 0.0
