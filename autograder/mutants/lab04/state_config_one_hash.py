# mutant: state_config_one_hash
# exercise: state
# replaces: state_solution
# why: refuses another config but names only this run's hash
@@
-        raise ValueError(f"checkpoint was written under config {state['config_hash']}, this run's config is "
+        raise ValueError(f"checkpoint was written under another config, this run's config is "
