# SPDX-License-Identifier: Apache-2.0
"""Directed scenarios of the memory-controller arbiter, run in
:class:`~t3hw.verif.arbiter_env.ArbiterEnv` and shared by the amaranth.sim tests
(``tests/test_arbiter_sim.py``) and the cocotb testbench (``cocotb_tests/tb_arbiter.py``):
:func:`run`, :func:`bound_holds_from_reset`, :func:`starvation_is_tight`,
:func:`hold_costs_one_slot`, :func:`hold_skips_tracked_writes`, :func:`hold_frees_track`,
:func:`compute_first_starves`, :func:`round_robin_alternates`,
:func:`mca_rr_alternates_below_threshold`, :func:`threshold_gates_comm`,
:func:`derives_threshold`, :func:`rejects_bad_config`, :func:`drops_bad_response`. Each
drives the environment's directed knobs (``always``, ``hold_occupancy``, ``hold_always``,
``fields``, :meth:`~t3hw.verif.arbiter_env.ArbiterEnv.configure`,
:meth:`~t3hw.verif.arbiter_env.ArbiterEnv.send`) while the environment scores every cycle
against the model, and asserts what the scenario is about from the RTL's grants.
"""

from t3hw.spec.layouts import ArbPolicy, WriteSource
from t3hw.spec.contract import ARBITER_FINISH_CYCLES as FINISH_CYCLES, MAX_WINDOW_LOG2

from sim_models.arbiter import COMPUTE_INPUTS, INPUTS


__all__ = ["run", "starvation_is_tight", "bound_holds_from_reset", "hold_skips_tracked_writes",
           "hold_frees_track", "hold_costs_one_slot", "compute_first_starves",
           "round_robin_alternates", "mca_rr_alternates_below_threshold",
           "threshold_gates_comm", "derives_threshold", "rejects_bad_config",
           "drops_bad_response"]


async def run(env, cycle, *, limit=10_000_000):
    """Run until :meth:`ArbiterEnv.done`, then two more cycles."""
    for _ in range(limit):
        await cycle()
        if env.done():
            await cycle()
            await cycle()
            return
    raise AssertionError(f"not done after {limit} cycles (cycle {env.cycle})")


async def _cycles(env, cycle, n):
    for _ in range(n):
        await cycle()


async def _quiesce(env, cycle, *, limit=100_000):
    """Stop the directed traffic and run until every request left pending is granted."""
    env.always, env.hold_occupancy, env.hold_always, env.fields = set(), 0, False, {}
    for _ in range(limit):
        if all(env.pending[n] is None for n in INPUTS) and env.model.out is None:
            break
        await cycle()
    env.hold_occupancy = None


def _granted(env, name, since=0):
    """Cycles (from the RTL's readies) in which input ``name`` was granted."""
    return [c for c, g, _ in env.log if g == name and c >= since]


async def starvation_is_tight(env, cycle, *, limit):
    """T3-MCA with compute requesting every cycle and the occupancy at its maximum: a DMA
    read is forced through exactly every ``limit + 1`` issue slots, and each is counted."""
    await _quiesce(env, cycle)
    top = (1 << env.p.occupancy_width) - 1
    env.configure(policy=ArbPolicy.T3_MCA.value, threshold=1, starvation_limit=limit)
    env.hold_occupancy, env.always = top, {"load", "dma"}
    await _cycles(env, cycle, 2)
    start, starved = env.cycle, env.model.stats["starved"]
    await _cycles(env, cycle, 8 * (limit + 1) + 4)
    grants = _granted(env, "dma", start)
    gaps = {b - a for a, b in zip(grants, grants[1:])}
    assert len(grants) >= 7 and gaps == {limit + 1}, (limit, grants)
    assert len(_granted(env, "load", start)) == env.cycle - start - len(grants)
    assert env.model.stats["starved"] - starved == len(grants)
    env.always, env.hold_occupancy = set(), None


async def bound_holds_from_reset(env, cycle):
    """Run first, right after reset into T3-MCA deriving its threshold (``mca_threshold =
    0``): with compute requesting every cycle and the occupancy at its maximum, the first
    DMA read is forced through in slot ``starvation_limit`` (the ``starvation_limit + 1``-th),
    while ``status.measuring`` is still 1."""
    m = env.model
    assert env.cycle == 0 and m.measuring and m.cfg["policy"] == ArbPolicy.T3_MCA.value
    limit = m.cfg["starvation_limit"]
    env.hold_occupancy, env.always = (1 << env.p.occupancy_width) - 1, {"load", "dma"}
    await _cycles(env, cycle, limit + 2)
    grants = _granted(env, "dma")
    assert grants[:1] == [limit], (limit, grants[:3])
    assert env.log[limit][2]["measuring"] == 1
    assert _granted(env, "load") == [c for c in range(limit + 2) if c != limit]
    env.always, env.hold_occupancy = set(), None


async def _holding(env, cycle, n, holds):
    """``n`` cycles with ``track_hold`` high in the cycles ``holds``."""
    for _ in range(n):
        env.hold_always = env.cycle in holds
        await cycle()
    env.hold_always = False


async def hold_skips_tracked_writes(env, cycle, *, cycles=40):
    """Round robin, all four inputs requesting, the writes tracked. Under ``track_hold`` no
    tracked write is granted: the load and the DMA read alternate in their slots; ``track``
    is low from the second cycle on; with only tracked writes waiting nothing is granted,
    while an untracked store goes. Without it, the tracked writes go again."""
    await _quiesce(env, cycle)
    env.configure(policy=ArbPolicy.ROUND_ROBIN.value)
    env.fields = {"store": {"tracked": 1}, "remote": {"tracked": 1}}
    env.always = set(INPUTS)
    await _cycles(env, cycle, 8)
    start = env.cycle
    env.hold_always = True
    await _cycles(env, cycle, cycles)
    order = [g for c, g, _ in env.log if c >= start]
    assert set(order) == {"load", "dma"} and all(a != b for a, b in zip(order, order[1:]))
    assert not any(v for c, _, v in env.track_log if c >= start + 2)
    env.always = {"store", "remote"}
    await _cycles(env, cycle, 4)                      # the pending load and DMA read drain
    start = env.cycle
    await _cycles(env, cycle, 10)
    assert not [g for c, g, _ in env.log if c >= start and g is not None]
    env.hold_always = False
    start = env.cycle
    await _cycles(env, cycle, 2)
    assert {g for c, g, _ in env.log if c >= start} == {"store", "remote"}
    await _quiesce(env, cycle)
    env.fields = {"store": {"tracked": 0}, "remote": {"tracked": 1}}
    env.always, env.hold_always = {"store", "remote"}, True
    start = env.cycle
    await _cycles(env, cycle, 10)
    assert {g for c, g, _ in env.log if c >= start} == {"store"}
    await _quiesce(env, cycle)


async def hold_frees_track(env, cycle):
    """Compute-first with a tracked store every cycle: ``track`` shows a write every cycle,
    and ``track_hold`` high for one cycle t (an issue slot) frees cycle t + 2 of it: that
    slot goes to nobody, and the stores go on from t + 1."""
    await _quiesce(env, cycle)
    env.configure(policy=ArbPolicy.COMPUTE_FIRST.value)
    env.fields, env.always = {"store": {"tracked": 1}}, {"store"}
    await _cycles(env, cycle, 6)
    for _ in range(3):
        t = env.cycle
        await _holding(env, cycle, 6, {t})
        track = {c: v for c, _, v in env.track_log}
        assert [track[t + i] for i in range(6)] == [True, True, False, True, True, True], t
        assert _granted(env, "store", t) == [t + i for i in range(1, 6)]
    await _quiesce(env, cycle)


async def hold_costs_one_slot(env, cycle, *, limit):
    """T3-MCA, compute requesting every cycle, the occupancy at its maximum, a tracked
    remote write always waiting: it is forced through every ``limit + 1`` slots. A
    ``track_hold`` in a slot the remote write would not have had costs it nothing; one in
    its forced slot gives that slot to the load and delays the write by exactly one slot."""
    await _quiesce(env, cycle)
    top = (1 << env.p.occupancy_width) - 1
    env.configure(policy=ArbPolicy.T3_MCA.value, threshold=1, starvation_limit=limit)
    env.fields = {"remote": {"tracked": 1}}
    env.hold_occupancy, env.always = top, {"load", "remote"}
    await _cycles(env, cycle, 2)
    while not _granted(env, "remote", env.cycle - 1):
        await cycle()
    g0 = env.cycle - 1
    g1, g2 = g0 + limit + 1, g0 + 2 * limit + 3       # the second one delayed by a slot
    await _holding(env, cycle, 3 * limit + 4, {g0 + 1, g1 + limit + 1})
    assert _granted(env, "remote", g0)[:3] == [g0, g1, g2], (g0, limit, _granted(env, "remote", g0))
    assert g1 + limit + 1 in _granted(env, "load", g0)
    await _quiesce(env, cycle)


async def compute_first_starves(env, cycle, *, cycles=500):
    """Compute-first has no bound: with compute requesting every cycle, communication waits
    as long as it does, and goes in the first free slot."""
    await _quiesce(env, cycle)
    env.configure(policy=ArbPolicy.COMPUTE_FIRST.value)
    env.always = {"load", "store", "remote"}
    await _cycles(env, cycle, 2)
    start = env.cycle
    await _cycles(env, cycle, cycles)
    assert not _granted(env, "remote", start)
    env.always = {"remote"}
    await _cycles(env, cycle, 3)                      # the pending load and store drain
    stop = env.cycle
    await _cycles(env, cycle, 4)
    assert _granted(env, "remote", stop) == list(range(stop, stop + 4))
    env.always = set()


async def round_robin_alternates(env, cycle, *, cycles=200):
    """Round robin with all four inputs requesting every cycle: the classes alternate and,
    inside each class, the inputs alternate: every input gets one slot in four."""
    await _quiesce(env, cycle)
    env.configure(policy=ArbPolicy.ROUND_ROBIN.value)
    env.always = set(INPUTS)
    await _cycles(env, cycle, 2)
    start = env.cycle
    await _cycles(env, cycle, cycles)
    order = [g for c, g, _ in env.log if c >= start]
    assert None not in order
    for a, b in zip(order, order[1:]):
        assert (a in COMPUTE_INPUTS) != (b in COMPUTE_INPUTS), order
    for a, b in zip(order, order[2:]):
        assert a != b, order
    env.always = set()


async def mca_rr_alternates_below_threshold(env, cycle, *, threshold=5, cycles=60):
    """T3_MCA_RR with a load and a DMA read requesting every cycle: while the occupancy
    stays three below the threshold the classes alternate (round robin: its turn compares
    the occupancy of two cycles before, plus two, with the threshold); once it is held at
    two below the threshold only the load goes until the DMA read is forced through,
    every ``limit + 1`` slots (T3-MCA)."""
    await _quiesce(env, cycle)
    limit = 7
    env.configure(policy=ArbPolicy.T3_MCA_RR.value, threshold=threshold, starvation_limit=limit)
    env.hold_occupancy, env.always = threshold - 3, {"load", "dma"}
    await _cycles(env, cycle, 4)
    start = env.cycle
    await _cycles(env, cycle, cycles)
    order = [g for c, g, _ in env.log if c >= start]
    assert None not in order and all(a != b for a, b in zip(order, order[1:])), order
    env.hold_occupancy = threshold - 2
    await _cycles(env, cycle, 3)                      # the turn sees the occupancy late
    start = env.cycle
    await _cycles(env, cycle, 4 * (limit + 1) + 2)
    grants = _granted(env, "dma", start)
    assert len(grants) >= 3 and {b - a for a, b in zip(grants, grants[1:])} == {limit + 1}, \
        (limit, grants)
    env.always, env.hold_occupancy = set(), None


async def threshold_gates_comm(env, cycle, *, threshold=5):
    """T3-MCA without compute: a DMA read waits while the occupancy is at the threshold or
    one below, and goes every slot from the cycle after it falls two below (the gate
    compares the occupancy of the cycle before, plus the request it may have issued since,
    with the threshold)."""
    await _quiesce(env, cycle)
    smax = (1 << env.p.starvation_width) - 1
    env.configure(policy=ArbPolicy.T3_MCA.value, threshold=threshold, starvation_limit=smax)
    env.hold_occupancy, env.always = threshold, {"dma"}
    # the configuration is in effect two cycles after it is written, and compared with the
    # occupancy in the cycle after that
    await _cycles(env, cycle, 3)
    # both closed phases together stay below the starvation limit (no forced grant)
    k = max(1, min(10, (smax - 4) // 2))
    start = env.cycle
    await _cycles(env, cycle, k)
    assert not _granted(env, "dma", start)
    env.hold_occupancy = threshold - 1
    start = env.cycle
    await _cycles(env, cycle, k)
    assert not _granted(env, "dma", start)
    env.hold_occupancy = threshold - 2
    start = env.cycle
    await _cycles(env, cycle, 10)
    assert _granted(env, "dma", start) == list(range(start + 1, start + 10)), \
        (start, list(env.log)[-12:])
    env.always, env.hold_occupancy = set(), None


async def derives_threshold(env, cycle, *, saturation, window_log2, duty):
    """The threshold derived from a known compute pattern equals
    ``ceil(saturation * (W + C) / (2 W))`` (computed here), and is in effect from the cycle
    after the window; T3-MCA measures until then."""
    await _quiesce(env, cycle)
    w = 1 << window_log2
    env.configure(policy=ArbPolicy.T3_MCA.value, threshold=0, saturation=saturation,
                  window_log2=window_log2)
    await _cycles(env, cycle, 3)
    assert env.log[-1][2]["measuring"] == 1 and env.log[-1][2]["threshold"] == 0
    first = None
    for i in range(w + 4):
        env.always = {"load"} if i % duty == 0 else set()
        await cycle()
        if first is None and _granted(env, "load", env.cycle - 1):
            first = env.cycle - 1
    env.always = set()
    await _cycles(env, cycle, 2)
    grants = len([c for c in _granted(env, "load", first) if c < first + w])
    expect = -(-saturation * (w + grants) // (2 * w))
    status = {c: st for c, _, st in env.log}
    assert status[first + w + FINISH_CYCLES - 1]["measuring"] == 1, \
        "measuring ends after the finish cycles"
    assert status[first + w + FINISH_CYCLES] == {"policy": ArbPolicy.T3_MCA.value, "threshold": expect,
                                     "measuring": 0}, (status[first + w + FINISH_CYCLES], expect, grants)


async def rejects_bad_config(env, cycle):
    """Each kind of bad configuration sets ``bad_config`` and changes nothing."""
    await _quiesce(env, cycle)
    bads = [dict(starvation_limit=0), dict(window_log2=MAX_WINDOW_LOG2 + 1),
            dict(threshold=0, saturation=0)]
    for bad in bads:
        before = env.log[-1][2] if env.log else None
        env.configure(**{**env.model.cfg, **bad})
        await _cycles(env, cycle, 2)
        assert env.model.errors_codec.unpack(env._outs["errors"])["bad_config"] == 1, bad
        if before is not None:
            assert env.log[-1][2] == before
        env.clear_once = True
        await _cycles(env, cycle, 2)
        assert not any(env.model.errors_codec.unpack(env._outs["errors"]).values())


async def drops_bad_response(env, cycle):
    """A response from the remote source is dropped and sets ``bad_response``; good ones of
    both sources pass."""
    await _quiesce(env, cycle)
    for source in (WriteSource.COMPUTE, WriteSource.DMA, WriteSource.REMOTE):
        env.response = {"source": source.value, "tag": 1}
        await _cycles(env, cycle, 3)
        bad = env.model.errors_codec.unpack(env._outs["errors"])["bad_response"]
        assert bad == (source == WriteSource.REMOTE), source
