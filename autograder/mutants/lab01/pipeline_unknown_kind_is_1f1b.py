# mutant: pipeline_unknown_kind_is_1f1b
# exercise: pipeline
# replaces: pipeline_solution
# why: any kind other than "gpipe" silently runs 1F1B
@@
-    if kind != "1f1b":
-        raise ValueError(f"kind must be 'gpipe' or '1f1b', got {kind!r}")
