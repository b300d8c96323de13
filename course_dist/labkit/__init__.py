"""Per-lab machinery (models, data, measurement harnesses, plots) that the notebooks import; never a solution."""
