# mutant: dcp_no_staging_fsync
# exercise: dcp
# replaces: dcp_solution
# why: trusts DCP's fsyncs: the files are durable, but the staging directory that names them is never fsynced
@@
-        fsync_dir(staging)  # DCP fsyncs the files, not the directory that names them
