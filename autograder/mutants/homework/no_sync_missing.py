# mutant: no_sync_missing
# exercise: ddp
# replaces: fttrainer/ddp.py (package module: body appended; re-binds train_step)
# why: accumulates correctly (loss / accum) but never enters model.no_sync(): every micro-batch's backward
#      all-reduces the gradients - same numbers, accum times the communication (the losses cannot tell)


def train_step(model, optimizer, scheduler, data, micro_batches, device, probe=None):
    accum = len(micro_batches)
    t0 = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    clock = _GradClock(model)
    try:
        for idx in micro_batches:
            x, y = data.batch(idx)
            loss = F.cross_entropy(model(x.to(device)), y.to(device)) / accum
            loss.backward()
            total += loss.item()
        wait_s = time.perf_counter() - clock.last if isinstance(model, DDP) else 0.0
    finally:
        clock.close()
    optimizer.step()
    scheduler.step()
    sync_s = 0.0
    if probe is not None:
        ts = time.perf_counter()
        probe()
        sync_s = time.perf_counter() - ts
    step_s = time.perf_counter() - t0
    return StepStats(loss=total, compute_s=step_s - wait_s - sync_s, wait_s=wait_s, sync_s=sync_s)
