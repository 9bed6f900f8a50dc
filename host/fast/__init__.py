"""Fast software backend: vectorised numpy (and compiled where order matters), bit-identical to
the golden model in kmerspec.golden."""
