# Implicit Muscles shape preset: Pectoral (paper: fibres with rest (3, 9)).
import bpy
muscle = bpy.context.object.implicit_muscles.active_muscle

muscle.alpha_rest = 3
muscle.beta_rest = 9
muscle.alpha_active = 4
muscle.beta_active = 9
muscle.eccentricity_rest = 0.7
muscle.eccentricity_active = 0.7
muscle.stiffness = 0.5
muscle.fibres = 4
muscle.origin_spread = 0.15
muscle.insertion_spread = 0.02
