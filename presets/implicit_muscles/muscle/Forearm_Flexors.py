# Implicit Muscles shape preset: Forearm Flexors (belly near the elbow, long tendon to the wrist).
import bpy
muscle = bpy.context.object.implicit_muscles.active_muscle

muscle.alpha_rest = 2
muscle.beta_rest = 4
muscle.alpha_active = 3
muscle.beta_active = 6
muscle.eccentricity_rest = 0.5
muscle.eccentricity_active = 0.5
muscle.stiffness = 0.4
muscle.fibres = 1
muscle.origin_spread = 0.0
muscle.insertion_spread = 0.0
