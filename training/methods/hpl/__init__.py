"""HPL (Humanoid Parkour Learning): fractal terrains, curriculum, scandot oracle, multi-process DAgger."""
