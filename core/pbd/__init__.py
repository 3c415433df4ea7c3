"""Position Based Dynamics of the muscle axes (paper §6, thesis ch. 5).

settings.py (PBDSettings), model.py (PBDModel, build_pbd_model), state.py (PBDState), control.py (MuscleInputs,
the inputs' defaults, PBDControl), solver.py (PBDSolver), settle.py (initial_state, rest_state), reference.py (numpy
reference of one substep), distance_grid.py (bone distance grids).
"""
