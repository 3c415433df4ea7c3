"""Reading the scene: rigs, side names, keys, joints, fats, a frame's inputs and the live meshes (see README.md)."""
