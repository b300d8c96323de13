"""Fast tests of lab 03's machinery (course_dist/labkit/lab03/) - never of the exercises' answers: where a
harness needs a student's piece, torch's own implementation (FSDP2, ZeroRedundancyOptimizer, DCP) stands in.

    .venv/bin/python -m pytest tests/test_lab03_labkit.py -q
"""

from __future__ import annotations

import os

import pandas as pd
import pytest
import torch
import torch.distributed as dist

from course_dist import launch
from course_dist.labkit import lab03


def torch_fsdp2(model, names, reshard_after_forward=True):  # noqa: ANN001, ANN201 - torch's FSDP2 itself
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    for name in names:
        fully_shard(model.get_submodule(name), mesh=mesh, reshard_after_forward=reshard_after_forward)
    fully_shard(model, mesh=mesh)  # the root at torch's default (None): not resharded after forward
    return model


class TorchZero(torch.optim.Optimizer):
    """torch's ZeroRedundancyOptimizer behind the exercise's interface (``(params, optimizer_cls, **kw)``,
    ``.optimizer``, a ``step()`` that reduces the gradients itself: here DDP's all-reduce, then torch's)."""

    def __init__(self, params, optimizer_cls, **kwargs):  # noqa: ANN001
        from course_dist.labkit.lab03.harness import _import_zero_redundancy

        params = list(params)
        super().__init__(params, kwargs)
        self.zero = _import_zero_redundancy()(params, optimizer_class=optimizer_cls, **kwargs)
        self.optimizer = self.zero.optim

    def step(self, closure=None) -> None:  # noqa: ANN001
        _average_used(self.zero._all_params)
        self.zero.step()


def _average_used(params) -> None:  # noqa: ANN001
    """DDP(find_unused_parameters=True)'s rule: a parameter with a gradient on any rank gets the average over
    all ranks (zeros where unused); one with none anywhere keeps ``grad = None``."""
    params = list(params)
    used = torch.tensor([p.grad is not None for p in params], dtype=torch.int32)
    dist.all_reduce(used)
    for p, n in zip(params, used.tolist(), strict=True):
        if n:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            dist.all_reduce(p.grad)
            p.grad.div_(dist.get_world_size())


def test_model_is_uneven_and_policies_name_real_modules():
    model = lab03.make_model(size="tiny")
    assert lab03.numel(model) % 2 == 1, "the lab wants uneven shards"
    assert lab03.wrap_policy(model, "whole") == []
    assert lab03.wrap_policy(model, "block") == ["blocks.0", "blocks.1"]
    assert len(lab03.wrap_policy(model, "linear")) == 6
    assert [lab03.unit_count(model, p) for p in lab03.POLICIES] == [1, 3, 6]
    with pytest.raises(ValueError, match=r"do not exist in LabModel: \['blocks.7'\]"):
        lab03.wrap_policy(model, ["blocks.0", "blocks.7"])
    with pytest.raises(ValueError, match="policy must be one of"):
        lab03.wrap_policy(model, "per-layer")
    with pytest.raises(ValueError, match=r"ModelConfig.width must be a positive int, got 0"):
        lab03.ModelConfig(width=0)
    with pytest.raises(ValueError, match="does not divide"):
        lab03.local_batch(0, 10, 3, 0)


def test_flat_views_free_and_refill():
    ps = [torch.nn.Parameter(torch.arange(6.0).reshape(2, 3)), torch.nn.Parameter(torch.ones(3))]
    flat = lab03.flatten([p.detach() for p in ps], 10)
    assert flat.tolist() == [0, 1, 2, 3, 4, 5, 1, 1, 1, 0]
    lab03.view_params(ps, flat)
    lab03.free_storage(flat)
    assert flat.untyped_storage().nbytes() == 0 and ps[0].shape == (2, 3)
    lab03.alloc_storage(flat)
    flat.copy_(torch.arange(10.0))
    assert ps[1].tolist() == [6, 7, 8], "parameters are views: refilling the buffer refills them"
    out = [torch.zeros(2), torch.zeros(1)]
    lab03.unflatten_into(torch.tensor([5.0, 6.0, 7.0, 8.0]), out)
    assert out[0].tolist() == [5, 6] and out[1].tolist() == [7]
    with pytest.raises(ValueError, match="cannot pad 3 elements down to 2"):
        lab03.flatten([torch.ones(3)], 2)


def test_backward_on_freed_parameters_names_the_unit_and_the_hook():
    # issue 33: a ZeRO-3 unit freed after forward and never gathered before backward ends in torch's
    # "setStorage: ... out of bounds for storage of size 0"; the harness's guard names the unit and the hook
    import torch.nn.functional as F

    from course_dist.labkit.lab03.guards import backward_or_explain

    class Unit:  # the one thing the guard reads: the unit's parameters (views of a flat buffer)
        def __init__(self, params):  # noqa: ANN001
            self.params = params
            self.full = lab03.flatten([p.detach() for p in params])
            lab03.view_params(params, self.full)

    x, y = lab03.local_batch(0, 4, 1, 0, 0, "tiny")
    for name in ["blocks.1", ""]:
        model = lab03.make_model(size="tiny")
        mine = [p for n, p in model.named_parameters() if n.startswith(name)] if name else \
            list(model.parameters())
        unit = Unit(mine)
        loss = F.cross_entropy(model(x), y)
        lab03.free_storage(unit.full)  # freed after forward, no gather before backward
        with pytest.raises(RuntimeError) as err:
            backward_or_explain(loss, model, [unit], [name])
        want = f"unit '{name}'" if name else "the root unit"
        msg = str(err.value)
        assert want in msg and "still sharded at backward" in msg and "pre-backward hook" in msg, msg
    model = lab03.make_model(size="tiny")
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):  # other errors pass
        backward_or_explain(loss, model, [], [])


def test_flat_slice_copies_only_the_overlap():
    ts = [torch.arange(6.0).reshape(2, 3), torch.arange(6.0, 9.0), torch.arange(9.0, 11.0)]
    for start, end in [(0, 11), (2, 7), (6, 9), (4, 4), (10, 11)]:
        assert lab03.flat_slice(ts, start, end).tolist() == lab03.flatten(ts)[start:end].tolist()
    out = torch.full((3,), -1.0)
    assert lab03.flat_slice(ts, 5, 8, out=out) is out and out.tolist() == [5, 6, 7]
    with pytest.raises(ValueError, match="ends past the 11 elements"):
        lab03.flat_slice(ts, 9, 12)
    with pytest.raises(ValueError, match="out has 3 elements"):
        lab03.flat_slice(ts, 0, 2, out=out)


def test_ledger_counts_live_storages_and_freed_ones_as_zero():
    with lab03.MemoryLedger() as ledger:
        a = torch.zeros(1000)
        b = a[:10]  # a view: same storage, counted once
        base = ledger.mark("a")
        assert base >= 4000
        c = torch.ones(500)
        assert ledger.current() - base == 2000
        lab03.free_storage(c)
        assert ledger.current() == base
        with lab03.ledger.untracked():
            d = torch.ones(10_000)
        assert ledger.current() == base, "tensors made while untracked are not counted"
        del a, b
        assert ledger.current() <= base - 4000
    assert ledger.peak >= base + 2000
    assert list(ledger.frame().columns) == ["where", "live_bytes", "peak_so_far"]
    assert d.numel() == 10_000


def test_ledger_ignores_garbage_older_than_it_and_restores_the_freeze():
    """No collection when the ledger opens (a full one over the interpreter cost 110-150 ms a ledger): garbage
    made before it holds nothing it counts, so its peak is the same with or without that garbage."""
    import gc

    def run() -> tuple[int, list[int]]:
        with lab03.MemoryLedger() as ledger:
            x = torch.ones(1000)
            y = x * 2
            ledger.mark("two")
            del x
            z = y + 1
            ledger.mark("after del")
            del y, z
            return ledger.peak, list(ledger.frame()["live_bytes"])

    gc.collect()
    clean = run()
    cycle: list = [torch.ones(50_000)]
    cycle.append(cycle)  # old garbage holding a tensor: a collection at entry would have freed it
    del cycle
    assert run() == clean, f"with older garbage {run()}, without {clean}"
    assert clean == (8000, [8000, 8000]), clean
    assert gc.get_freeze_count() == 0, "the ledger unfreezes what it froze"
    with lab03.MemoryLedger():
        outer = gc.get_freeze_count()
        with lab03.MemoryLedger():
            pass
        assert gc.get_freeze_count() >= outer > 0, "an inner ledger leaves the outer one's freeze"
    assert gc.get_freeze_count() == 0
    gc.collect()


def test_traffic_ring_bytes_from_a_trace():
    trace = pd.DataFrame([
        {"rank": 0, "op": "all_reduce", "shape": (100,), "dtype": "float32", "t_start": 1.0},
        {"rank": 0, "op": "all_gather_single", "shape": (50,), "dtype": "float32", "t_start": 2.0},
        {"rank": 0, "op": "reduce_scatter_single", "shape": (100,), "dtype": "float32", "t_start": 3.0},
        {"rank": 1, "op": "all_reduce", "shape": (100,), "dtype": "float32", "t_start": 1.0},
    ])
    t = lab03.traffic(trace, world=2)
    assert dict(zip(t["op"], t["ring_bytes"], strict=True)) == {
        "all_reduce": 400.0, "all_gather_single": 200.0, "reduce_scatter_single": 200.0}
    assert lab03.bytes_moved(trace, 2, window=(1.5, 3.5)) == 400.0, "RS + AG = one all-reduce's bytes"
    assert lab03.collective_counts(trace, 0, steps=1, window=(0, 1.5)) == {"all_reduce": 1.0}
    # lab01's bus-byte fit: a perfect ring at world 2 (steps 1, bus factor 1/2 for AG and RS, 2 and 1 for AR)
    from course_dist.labkit import lab01

    sizes = [1e4, 1e5, 1e6]
    meas = pd.DataFrame([{"collective": c, "bytes": s, "time_s": t}
                         for c, (a, b) in {"all_gather": (1e-4, 1e-9), "reduce_scatter": (3e-4, 4e-9),
                                           "all_reduce": (2e-4, 1e-9)}.items()
                         for s, t in zip(sizes, lab01.synthetic(c, 2, a, b, sizes), strict=True)])
    fits = lab03.fit_bus(meas, world=2)
    assert fits["reduce_scatter"] == pytest.approx((3e-4, 4e-9)), fits  # its own fit, not all-gather's
    assert fits["all_gather"] == pytest.approx((1e-4, 1e-9)), fits
    # one RS of 100 floats (bus bytes 200) and one AG: 1 x alpha + 200 x beta each
    want = 3e-4 + 200 * 4e-9 + 1e-4 + 200 * 1e-9
    got = lab03.predicted_comm_s(trace, 2, 0, 1, (1.5, 3.5), fits)
    assert got == pytest.approx(want), (got, want)
    table = lab03.fit_table(fits).set_index("collective")
    assert table.loc["all_gather", "bus_GB_per_s"] == pytest.approx(1.0), table
    # issue 33: a noisy small size above the largest gives a slope <= 0: no bandwidth (NaN, a note), never inf
    noisy = pd.DataFrame([{"collective": "all_reduce", "bytes": s, "time_s": t}
                          for s, t in [(1024, 4e-4), (2**14, 1.5e-4), (2**18, 2.6e-4)]])
    row = lab03.fit_table(lab03.fit_bus(noisy, world=2)).iloc[0]
    assert pd.isna(row["bus_GB_per_s"]) and "not resolved" in row["note"], row.to_dict()


def test_harnesses_with_torchs_own_implementations(no_surviving_children):
    # one launch: DDP arithmetic, ZeroRedundancyOptimizer behind the ZeRO-1 harness, FSDP2 per block
    def work():
        z = lab03.zero1_check(TorchZero)
        f = lab03.fsdp2_check(torch_fsdp2, [{"policy": "block"}, {"policy": "block", "summed": True}])
        return z, f

    res = launch(work, world_size=2, trace=True, timeout=120)
    z, f = res[0]
    single = lab03.train_single(steps=3, grads=True)
    assert lab03.max_abs_diff(z["yours"]["params"], z["torch"]["params"]) == 0
    for name, u in z["rank_use"].items():  # parameters used on some ranks only: torch's ZeRO-1 is DDP's rule
        assert u["vs_ddp"] < 1e-6 and u["ddp_vs_zro"] == 0, (name, u)
        assert u["change"]["first_only.weight"][1] > 0.01, (name, u["change"])  # DDP moves it
    assert lab03.max_abs_diff(z["ddp"]["params"], single["params"]) < 1e-4
    full = z["ddp"]["optimizer_bytes"]
    assert 0.3 * full < res[1][0]["yours"]["optimizer_bytes"] < 0.7 * full, "torch's ZeRO-1 shards the state"
    run, summed = f["runs"]
    assert run["sharded"] == len(single["params"])
    assert lab03.max_abs_diff(run["params"], single["params"]) < 1e-4
    ratio = sum(float((summed["grads"][k] * single["grads"][k]).sum()) for k in single["grads"]) / \
        sum(float((single["grads"][k] ** 2).sum()) for k in single["grads"])
    assert ratio == pytest.approx(2.0, rel=1e-4), "the planted bug doubles the gradients at world 2"
    counts = lab03.collective_counts(res.trace, 0, 3, run["window"])
    units = lab03.unit_count(lab03.make_model(), "block")
    # the root keeps its parameters from forward to backward (torch's default): one all-gather fewer
    assert counts == {"all_gather_single": 2.0 * units - 1, "reduce_scatter_single": 1.0 * units}, counts
    ddp = lab03.bytes_moved(res.trace, 2, 0, 3, f["ddp"]["window"])
    ratio = lab03.bytes_moved(res.trace, 2, 0, 3, run["window"]) / ddp
    root = lab03.fsdp2_root_fraction(lab03.make_model(), "block")
    assert ratio == pytest.approx(1.5 - 0.5 * root, rel=0.02), (ratio, root)
    assert run["peak_bytes"] > run["steady_bytes"] > 0


def test_checkpoint_saved_at_world_2_loads_at_world_1(tmp_path, no_surviving_children):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    def save(model, opt, path):  # noqa: ANN001
        m, o = get_state_dict(model, opt)
        dcp.save({"model": m, "optim": o}, checkpoint_id=path)

    def load(model, opt, path):  # noqa: ANN001
        m, o = get_state_dict(model, opt)
        state = {"model": m, "optim": o}
        dcp.load(state, checkpoint_id=path)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])

    path = str(tmp_path / "ckpt")
    saved = launch(lab03.ckpt_train_save, world_size=2, args=(torch_fsdp2, save, path, 2, 3), timeout=120)
    assert ".metadata" in os.listdir(path)
    resumed = launch(lab03.ckpt_resume, world_size=1, args=(torch_fsdp2, load, path, 2), timeout=120)
    assert resumed[0]["error"] is None
    assert lab03.max_abs_diff(resumed[0]["params"], saved[0]["params"]) < 1e-5
    # a scheduler halves the learning rate every step: set_state_dict restores what dcp.load cannot (issue 34)
    assert resumed[0]["lr"] == saved[0]["lr"] == lab03.LR * 0.25, (resumed[0]["lr"], saved[0]["lr"])
    # the same loader (no shape check) into a wider model: DCP's CheckpointException, explained (issue 33)
    wide = launch(lab03.ckpt_resume, world_size=1, args=(torch_fsdp2, load, path, 2), kwargs={"size": "wide"},
                  timeout=120)[0]
    assert wide["error"] is None and "compare the checkpoint's shapes" in wide["dcp_error"], wide
    assert "blocks.0.fc1.weight" in wide["dcp_error"], wide["dcp_error"]


def _reduce_scatter_under_ledger() -> tuple[int, int]:
    with lab03.MemoryLedger() as ledger:
        flat = torch.ones(1000)
        out = torch.empty(500)
        dist.reduce_scatter_single(out, flat)
        out.div_(2)
        return ledger.peak, ledger.current()


def test_ledger_bills_a_collective_nothing_but_its_callers_tensors(no_surviving_children):
    # gloo's reduce-scatter splits and copies its input on the caller's wait(): those are the backend's
    # (NCCL has none), not the caller's, so the peak is the caller's two tensors exactly
    peak, live = launch(_reduce_scatter_under_ledger, world_size=2, timeout=60)[0]
    assert peak == 4 * 1000 + 4 * 500, f"peak {peak} bytes, want {4 * 1500} (flat + out, no backend copies)"
    assert live == 4 * 1500, f"live {live}"


def test_mismatch_models_differ_as_their_names_say():
    # the checkpoint refusals need one model per kind of difference: other shapes, an extra block, one fewer
    base = lab03.model_config()
    assert lab03.model_config("wide").hidden == base.hidden + 8
    assert lab03.model_config("deep").blocks == base.blocks + 1
    assert lab03.model_config("shallow").blocks == base.blocks - 1
    lab = set(lab03.make_model().state_dict())
    assert set(lab03.make_model(size="deep").state_dict()) - lab == {
        f"blocks.{base.blocks}.{n}" for n in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")}
    assert lab - set(lab03.make_model(size="shallow").state_dict()) == {
        f"blocks.{base.blocks - 1}.{n}" for n in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")}
    with pytest.raises(ValueError, match="got 'huge'"):
        lab03.model_config("huge")


def test_quirky_model_sizes_are_uneven_at_world_3():
    half, full = lab03.QuirkyModel(0), lab03.QuirkyModel(0, half=False)
    by_dtype: dict[torch.dtype, int] = {}
    for p in half.parameters():
        by_dtype[p.dtype] = by_dtype.get(p.dtype, 0) + p.numel()
    assert by_dtype == {torch.float32: 253, torch.bfloat16: 35}, by_dtype
    assert {p.dtype for p in full.parameters()} == {torch.float32}
    assert sum(p.numel() for p in full.parameters()) == 295  # 295 % 3 == 1: uneven for torch ZeRO-1


def test_zero1_requirements_with_torchs_zero_redundancy_optimizer(no_surviving_children):
    # torch's own ZeRO-1 behind the exercise's interface meets the wrapped optimizer's results; on the fp32
    # model it is the oracle itself (difference 0)
    res = launch(lab03.zero1_requirements, world_size=3, args=(TorchZeroMixed,), timeout=120)
    for name, r in res[0].items():
        assert r["zro_max_diff"] < 1e-6, (name, r["zro_max_diff"])
        assert r["lr_after"] == pytest.approx(r["lr_want"]), (name, r["lr_after"])
        # (inner_lr is not checked here: this stand-in shares its group dicts with the wrapped optimizer, so
        # it shows the lr after the last schedule step; a wrapper that syncs before its step shows the one it
        # used)


class TorchZeroMixed(TorchZero):
    """ZeroRedundancyOptimizer refuses mixed dtypes: for the bf16 model the wrapped optimizer itself stands
    in (gradients all-reduced); for the all-fp32 model, torch's ZeroRedundancyOptimizer."""

    def __init__(self, params, optimizer_cls, **kwargs):  # noqa: ANN001
        groups = list(params)
        flat = [p for g in groups for p in (g["params"] if isinstance(g, dict) else [g])]
        if len({p.dtype for p in flat}) == 1:
            super().__init__(groups, optimizer_cls, **kwargs)
            self.param_groups = self.zero.param_groups  # a scheduler must reach torch's optimizer
            return
        torch.optim.Optimizer.__init__(self, groups, kwargs)
        self.optimizer = optimizer_cls(self.param_groups, **kwargs)
        self.zero = None

    def step(self, closure=None) -> None:  # noqa: ANN001
        if self.zero is not None:
            super().step(closure)
            return
        _average_used([p for g in self.param_groups for p in g["params"]])
        self.optimizer.step()


def _torch_depth_one(blocks, depth):  # noqa: ANN001, ANN202 - torch's prefetch API with the documented lists
    # set_modules_to_forward_prefetch's docstring: "a singleton list containing the next FSDP module";
    # backward: "the previous FSDP module" (what torch's implicit backward prefetch does)
    for i, b in enumerate(blocks):
        b.set_modules_to_forward_prefetch(blocks[i + 1:i + 2])
        b.set_modules_to_backward_prefetch(blocks[i - 1:i] if i else [])


def test_prefetch_observed_in_fsdp2s_own_order(no_surviving_children):
    # a hang guard, not a time limit: ~18 CPU-s a rank (full-size model), so at load ~11 on 2 cores, where a
    # rank gets a fifth of a core, it took 89-120 s and timed out at 120 (the lab's own cell allows 300)
    res = launch(lab03.prefetch_check, world_size=2, args=(_torch_depth_one, [None, 1]), kwargs={"timed": 2},
                 trace=True, timeout=300)
    implicit, explicit = res[0]
    blocks = lab03.model_config().blocks
    assert [n for n in implicit["order"] if n.startswith("blocks.")] == [f"blocks.{i}" for i in range(blocks)]
    # implicit: nothing ahead in forward on CPU, one behind in backward (torch's default backward prefetch)
    assert implicit["forward"] == [[i] for i in range(blocks)], implicit["forward"]
    assert implicit["backward"] == [[0]] + [[i - 1, i] for i in range(1, blocks)], implicit["backward"]
    ahead = [[i, i + 1] for i in range(blocks - 1)] + [[blocks - 1]]  # depth 1: the next block too
    assert explicit["forward"] == ahead, explicit["forward"]
    # FSDP2's own record of the prefetches: implicit one behind in backward, depth 1 one ahead in forward too
    assert implicit["prefetched"] == {"forward": [[]] * blocks,
                                      "backward": [[]] + [[i - 1] for i in range(1, blocks)]}, implicit
    assert explicit["prefetched"]["forward"] == [[i + 1] for i in range(blocks - 1)] + [[]], explicit
    for run in (implicit, explicit):
        for kind in ("forward", "backward"):
            assert run[kind] == lab03.want_gathered(run["order"], run["depth"], kind), (run["depth"], kind)
            assert run["prefetched"][kind] == lab03.want_prefetched(run["order"], run["depth"], kind), run
        counts = [lab03.collective_counts(res.trace, 0, 2, r["window"]) for r in (implicit, explicit)]
        assert counts[0] == counts[1], counts
    assert lab03.max_abs_diff(explicit["params"], implicit["params"]) == 0
    table = lab03.overlap_table(res[0], res.trace, None, 2)
    assert list(table["prefetch"]) == ["implicit", "explicit, depth 1"]
    # depth 1 in forward: one more block gathered as each block computes, exactly one block's bytes more
    extra = table["extra live in forward / block bytes"].iloc[1]
    assert extra == pytest.approx(1.0, abs=0.05), f"one more block in flight: {extra:.3f} blocks more live"
    assert table["extra live in backward / block bytes"].iloc[1] == pytest.approx(0.0, abs=0.05), table
    assert (table["all_gather_s_per_step (exposed)"] > 0).all(), table
    assert (table["block_all_gather_s (trace)"] > 0).all(), table


def test_prefetch_records_read_in_issue_order():
    records = ["FSDP::root_pre_forward", "FSDP::pre_forward", "FSDP::pre_forward (blocks.0)",
               "FSDP::all_gather (blocks.0)", "FSDP::forward_prefetch for blocks.1",
               "FSDP::forward_prefetch for blocks.2", "FSDP::pre_backward",
               "FSDP::backward_prefetch for blocks.2",
               "FSDP::pre_backward (blocks.2)", "FSDP::backward_prefetch for blocks.0",
               "FSDP::backward_prefetch for blocks.1", "FSDP::pre_backward (blocks.1)"]
    got = lab03.prefetched(records, 3)  # the root's own prefetch (of blocks.2) is not a block's
    assert got == {"forward": [[1, 2], [], []], "backward": [[], [], [0, 1]]}, got
    order = ["blocks.0", "blocks.1", "blocks.2", ""]
    assert lab03.want_prefetched(order, 2, "backward") == [[], [0], [1, 0]]  # nearest first
    assert lab03.want_prefetched(order, 3, "forward") == [[1, 2], [2], []]
    assert lab03.want_prefetched(order, None, "forward") == [[], [], []]
    assert lab03.want_prefetched(order, None, "backward") == [[], [0], [1]]


def _recipe_step(params, master, optimizer, reduce_dtype):  # noqa: ANN001, ANN202
    # the recipe written out (the oracle it is held to is FSDP2's MixedPrecisionPolicy, inside the harness)
    with torch.no_grad():
        for p, m in zip(params, master, strict=True):
            g = p.grad.to(reduce_dtype)
            dist.all_reduce(g)
            m.grad = g.div_(dist.get_world_size()).float()
            p.grad = None
        optimizer.step()
        for p, m in zip(params, master, strict=True):
            p.copy_(m)
            m.grad = None


def test_mixed_precision_harness_against_fsdp2s_policy(no_surviving_children):
    out = launch(lab03.mixed_check, world_size=2, args=(_recipe_step,), timeout=120)[0]
    for name, run in out["runs"].items():
        assert run["grad0_diff"] == 0 and run["param_diff"] == 0, (name, run["grad0_diff"], run["param_diff"])
        assert run["steps_taken"] == 3 and run["dtypes"] == ["torch.bfloat16"], name
        want = {"bf16 parameters": 2, "bf16 gradients": 2, "fp32 master": 4, "fp32 master gradients": 0,
                "AdamW moments": 8}
        assert run["bytes_per_param"] == pytest.approx(want, abs=0.01), run["bytes_per_param"]
    eff = out["reduce_effect"]
    assert not eff["bitwise"] and 0 < eff["max_rel"] <= 2 ** -8, eff
