# Implicit Muscles shape preset: Gastrocnemius (calf; paper Fig. 11 active (4, 8)).
import bpy
muscle = bpy.context.object.implicit_muscles.active_muscle

muscle.alpha_rest = 3
muscle.beta_rest = 3
muscle.alpha_active = 4
muscle.beta_active = 8
muscle.eccentricity_rest = 0.4
muscle.eccentricity_active = 0.5
muscle.stiffness = 0.5
muscle.fibres = 1
muscle.origin_spread = 0.0
muscle.insertion_spread = 0.0
