# mutant: small_dataset_message
# exercise: sampler
# replaces: fttrainer/sampler.py
# why: refuses a dataset smaller than one global batch but names only the global batch, not the dataset's size
@@
-            raise ValueError(f"dataset of {size} samples is smaller than one global batch ({global_batch})")
+            raise ValueError(f"the dataset is smaller than one global batch ({global_batch})")
