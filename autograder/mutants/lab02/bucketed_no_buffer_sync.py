# mutant: bucketed_no_buffer_sync
# exercise: bucketed
# replaces: bucketed_solution
# why: buffers are never broadcast in forward (the old reference, issue 11): BatchNorm running stats drift
#   between ranks, torch DDP (broadcast_buffers=True) keeps rank 0's. The old tests passed it.
@@
-        with torch.no_grad():
-            for b in self.module.buffers():  # broadcast_buffers=True: rank 0's running stats, every forward
-                dist.broadcast(b, src=0)
