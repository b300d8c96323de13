"""Per-lab machinery (models, data, measurement harnesses, plots) for the notebooks; never solutions."""
