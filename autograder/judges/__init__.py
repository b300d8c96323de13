"""Trusted judge rules, one module per lab (``rule="<module>.<function>"``); never visible to a student kernel."""
