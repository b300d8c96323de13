# mutant: atomic_no_fsync
# exercise: atomic
# replaces: atomic_solution
# why: atomic renames but no fsync of the data: after a power loss the published files come back empty
@@
-        os.fsync(f.fileno())  # data on disk before anything can point at it
