"""VIPER rods (Angles et al. 2019): the second muscle solver, with a scale per vertex and a frame per segment."""
