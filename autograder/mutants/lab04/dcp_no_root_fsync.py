# mutant: dcp_no_root_fsync
# exercise: dcp
# replaces: dcp_solution
# why: renames but never fsyncs the root: after a power loss the published step may vanish
@@
-        fsync_dir(final.parent)
