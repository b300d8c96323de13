# mutant: stretch_mixed_no_copy_back
# exercise: mixed
# replaces: mixed_solution
# why: the masters are stepped but never copied back: the bf16 parameters the forward uses stay at their
#      initial values
@@
-        p.copy_(m)  # fp32 -> bf16: the forward sees the rounded master
