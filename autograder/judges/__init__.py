"""Trusted judge rules, one module per lab (``rule="<module>.<function>"``).

Never visible to a student's kernel: the sandbox shows only course_dist/ of the repository.
"""
