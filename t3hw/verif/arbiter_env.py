# SPDX-License-Identifier: Apache-2.0
"""The cycle-exact environment of the memory-controller arbiter (:mod:`t3hw.hw.arbiter`),
scored against its reference model (:class:`sim_models.arbiter.ArbiterModel`), and the
directed scenarios.

* :class:`ArbiterEnv`: seeded random requests on the four inputs (in bursts and lulls),
  back-pressure from the DRAM and on the responses, a random-walk DRAM occupancy trace,
  a random ``track_hold``, random configuration writes (some of them bad) and error clears.
  Every cycle it compares every ready, the DRAM request, the routed responses, the tracker
  write, the status, the error bits and every counter with the model, and it checks from
  the RTL's outputs alone that no input is granted without a request, that the starvation
  bounds hold and what ``track_hold`` promises.
* Scenarios shared by the amaranth.sim tests and the cocotb testbench: :func:`run`,
  :func:`bound_holds_from_reset`, :func:`starvation_is_tight`, :func:`hold_costs_one_slot`,
  :func:`hold_skips_tracked_writes`, :func:`hold_frees_track`, :func:`compute_first_starves`,
  :func:`round_robin_alternates`, :func:`mca_rr_alternates_below_threshold`,
  :func:`threshold_gates_comm`, :func:`derives_threshold`,
  :func:`rejects_bad_config`, :func:`drops_bad_response`.

Field names come from :mod:`t3hw.spec.layouts` through :class:`~t3hw.spec.layouts.Codec`.
"""

from collections import deque

from t3hw.spec.layouts import (WINDOW_LOG2_WIDTH, ArbPolicy, Codec, WriteSource,
                               arbiter_config_layout, arbiter_status_layout, load_layout,
                               load_response_layout, mem_request_layout, mem_response_layout,
                               mem_store_layout, read_request_layout, read_response_layout,
                               write_layout)
from t3hw.spec.contract import (ARBITER_FINISH_CYCLES as FINISH_CYCLES, MAX_WINDOW_LOG2,
                                arbiter_reset_config as reset_config)

from sim_models.arbiter import (COMPUTE_INPUTS, INPUTS, ArbiterModel, hold_bounds,
                                starvation_bound)

from .env import Stall, StreamEnv


#: Cycles of history :class:`ArbiterEnv` keeps for the directed scenarios.
LOG_CYCLES = 4096

__all__ = ["LOG_CYCLES", "ArbiterEnv", "run", "starvation_is_tight", "bound_holds_from_reset",
           "hold_skips_tracked_writes", "hold_frees_track", "hold_costs_one_slot",
           "compute_first_starves",
           "round_robin_alternates", "mca_rr_alternates_below_threshold",
           "threshold_gates_comm", "derives_threshold",
           "rejects_bad_config", "drops_bad_response"]


class ArbiterEnv(StreamEnv):
    """Random stimulus and cycle-exact scoreboard for :class:`t3hw.hw.arbiter.Arbiter`.

    Parameters
    ----------
    params : EngineParams
    rng : random.Random
        Seeded source of randomness.
    cycles : int
        Cycles of random traffic (0 for directed use only).
    policies : sequence of ArbPolicy or None
        Policies random configuration writes may choose (None: keep the reset one).
    config_rate : float
        Probability per cycle of a configuration write (a tenth of them bad).
    stall : float
        Probability per cycle that a back-pressure burst starts on ``dram`` and on each
        response output.
    hold : bool
        Drive ``track_hold`` at random during the random traffic (its rate changes with the
        traffic's phases, from never to 9 cycles in 10).

    Scoring, every cycle: the ready of every input and of ``response``; ``dram``,
    ``load_response``, ``dma_response`` and ``track``, field by field; ``status``; the error
    bits; every counter. From the RTL's outputs alone: no input is ready without a request;
    the communication class waits at most :func:`starvation_bound` issue slots, and each
    communication input at most twice that plus one, plus what ``track_hold`` adds
    (:func:`~sim_models.arbiter.hold_bounds`; checked while the configuration does not
    change, whether a threshold is being derived or not); no tracked write is granted with
    ``track_hold`` high, and one of the two cycles after it has no ``track`` write.
    """

    in_streams   = ("load", "store", "dma", "remote", "response", "config")
    out_streams  = ("dram", "load_response", "dma_response", "track")
    in_flags     = ("occupancy", "clear", "track_hold")
    out_flags    = ("status", "errors", "stats")
    always_ready = ("config", "track")

    def __init__(self, params, rng, *, cycles=0, policies=None, config_rate=0.002,
                 stall=0.1, hold=True):
        super().__init__()
        self.p, self.rng = params, rng
        self.model = ArbiterModel(params)
        self.cycles, self.policies, self.config_rate = cycles, policies, config_rate
        self.codecs = {
            "load": Codec(load_layout(params)), "store": Codec(mem_store_layout(params)),
            "dma": Codec(read_request_layout(params)), "remote": Codec(mem_store_layout(params)),
            "response": Codec(mem_response_layout(params)),
            "config": Codec(arbiter_config_layout(params)),
            "dram": Codec(mem_request_layout(params)),
            "load_response": Codec(load_response_layout(params)),
            "dma_response": Codec(read_response_layout(params)),
            "track": Codec(write_layout(params)),
            "status": Codec(arbiter_status_layout(params)),
        }
        self.stalls = {n: Stall(rng, stall, 8) for n in ("dram", "load_response",
                                                         "dma_response")}
        self.pending = {n: None for n in INPUTS + ("response",)}
        self.rate = {n: 0.5 for n in INPUTS}          # request probability, varied in phases
        self.random_hold = hold
        self.hold_rate = 0.1 if hold else 0.0         # track_hold probability, per phase
        self.track_hold = False
        self.hold_always = False                       # directed: track_hold high every cycle
        self.occupancy = 0
        self.config = None
        self.clear = 0
        self.clear_once = False                        # directed: clear the errors next cycle
        self.scripted = []                             # directed requests: (input, fields)
        self.always = set()                            # directed: inputs that always request
        self.fields = {}                               # directed: {input: fields it requests}
        self.hold_occupancy = None                     # directed: a fixed occupancy
        self.response = None                           # directed: a response to present
        #: (cycle, input granted, status) of the last LOG_CYCLES cycles, for the scenarios
        self.log = deque(maxlen=LOG_CYCLES)
        #: (cycle, track_hold, track valid) of the last LOG_CYCLES cycles
        self.track_log = deque(maxlen=LOG_CYCLES)
        self.grants = {n: 0 for n in INPUTS}
        self.forced = 0
        self.worst = {"comm": 0, "dma": 0, "remote": 0}   # longest waits without holds
        self.worst_held = {"comm": 0, "dma": 0, "remote": 0}  # ... with held slots in them
        self._wait = {"comm": 0, "dma": 0, "remote": 0}
        self._holds = {"comm": 0, "dma": 0, "remote": 0}  # slots held back, in the wait
        self._track_hist = deque(maxlen=3)                # (track_hold, track valid) per cycle
        self._outs = None

    # -- stimulus --------------------------------------------------------------------------
    def _request(self, name):
        p, rng = self.p, self.rng
        f = {"addr": rng.getrandbits(p.addr_width), "bytes": rng.randint(1, p.burst_bytes)}
        if name == "load":
            f["tag"] = rng.getrandbits(p.load_tag_width)
        elif name == "dma":
            f["tag"] = rng.getrandbits(p.read_tag_width)
        else:
            f.update(tile=rng.getrandbits(p.tile_width), kind=rng.randint(0, 1),
                     tracked=rng.randint(0, 1))
        return f

    def _config(self):
        p, rng = self.p, self.rng
        omax, smax = (1 << p.occupancy_width) - 1, (1 << p.starvation_width) - 1
        policy = (rng.choice(list(self.policies)) if self.policies is not None
                  else self.model.cfg["policy"])
        cfg = {"policy": int(getattr(policy, "value", policy)),
               "threshold": rng.choice([0, 0, rng.randint(1, omax)]),
               "saturation": rng.randint(1, omax),
               "window_log2": rng.randint(0, 6),
               "starvation_limit": rng.choice([1, rng.randint(1, min(smax, 16)),
                                               rng.randint(1, smax)])}
        if rng.random() < 0.1:
            bad = rng.choice(["starvation_limit", "window_log2", "zero"])
            if bad == "starvation_limit":
                cfg["starvation_limit"] = 0
            elif bad == "window_log2":
                cfg["window_log2"] = rng.randint(MAX_WINDOW_LOG2 + 1,
                                                 (1 << WINDOW_LOG2_WIDTH) - 1)
            else:
                cfg["threshold"] = cfg["saturation"] = 0
        return cfg

    def configure(self, **cfg):
        """Directed: present a configuration next cycle."""
        self.config = {**reset_config(self.p), **cfg}

    def send(self, name, **fields):
        """Directed: queue a request on input ``name`` (missing fields random)."""
        self.scripted.append((name, {**self._request(name), **fields}))

    def inputs(self):
        p, rng = self.p, self.rng
        running = self.cycle < self.cycles
        if running and rng.random() < 0.002:           # a new phase: bursts and lulls
            for n in INPUTS:
                self.rate[n] = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])
            if self.random_hold:
                self.hold_rate = rng.choice([0.0, 0.05, 0.1, 0.5, 0.9])
        for i, (name, fields) in enumerate(self.scripted):
            if self.pending[name] is None:
                self.pending[name] = fields
                del self.scripted[i]
                break
        for n in INPUTS:
            if self.pending[n] is None and (n in self.always
                                            or running and rng.random() < self.rate[n]):
                self.pending[n] = {**self._request(n), **self.fields.get(n, {})}
        if self.response is not None and self.pending["response"] is None:
            self.pending["response"], self.response = self.response, None
        if running and self.pending["response"] is None and rng.random() < 0.3:
            source = rng.choice([0, 1, 0, 1, 2 if rng.random() < 0.02 else 1])
            self.pending["response"] = {"source": source,
                                        "tag": rng.getrandbits(p.mem_tag_width)}
        if running and self.config is None and rng.random() < self.config_rate:
            self.config = self._config()
        omax = (1 << p.occupancy_width) - 1
        if self.hold_occupancy is not None:
            self.occupancy = self.hold_occupancy
        elif running:
            step = rng.choice([-1, 0, 1, 1, -1, rng.randint(-omax, omax)])
            self.occupancy = min(omax, max(0, self.occupancy + step))
        clear = self.clear_once or running and rng.random() < 0.001
        self.clear = (1 << self.model.errors_codec.width) - 1 if clear else 0
        self.clear_once = False
        ins = {n: None if self.pending[n] is None else self.codecs[n].pack(**self.pending[n])
               for n in INPUTS + ("response",)}
        ins["config"] = None if self.config is None else self.codecs["config"].pack(**self.config)
        ins.update({n: s.ready() for n, s in self.stalls.items()})
        self.track_hold = bool(self.hold_always or running and self.hold_rate
                               and rng.random() < self.hold_rate)
        ins.update(track=True, occupancy=self.occupancy, clear=self.clear,
                   track_hold=int(self.track_hold))
        return ins

    # -- scoring ---------------------------------------------------------------------------
    def check(self, outs):
        ins, cyc, m = self._ins, self.cycle, self.model
        c = self.codecs
        valid = {n: self.pending[n] is not None for n in INPUTS}
        # from the RTL alone: nothing is granted without a request
        for n in INPUTS:
            assert not outs[n] or self.pending[n] is not None, \
                f"cycle {cyc}: {n}.ready without a request"
        held = m.held(self.pending, self.track_hold)
        pick, forced, slot = m.decide(valid, ins["dram"], held)
        for n in INPUTS:
            assert outs[n] == (n == pick), \
                f"cycle {cyc}: {n}.ready {outs[n]}, model grants {pick} (status {m.status()}," \
                f" wait {m.wait}, occupancy {self.occupancy})"
        got = None if outs["dram"] is None else c["dram"].unpack(outs["dram"])
        assert got == m.out, f"cycle {cyc}: dram {got}, model {m.out}"
        got = None if outs["track"] is None else c["track"].unpack(outs["track"])
        assert got == m.track, f"cycle {cyc}: track {got}, model {m.track}"
        # responses: routed by source
        rsp = self.pending["response"]
        exp_route = {"load_response": None, "dma_response": None}
        if rsp is not None and rsp["source"] == WriteSource.COMPUTE.value:
            exp_route["load_response"] = {"tag": rsp["tag"] & ((1 << self.p.load_tag_width) - 1)}
        elif rsp is not None and rsp["source"] == WriteSource.DMA.value:
            exp_route["dma_response"] = {"tag": rsp["tag"] & ((1 << self.p.read_tag_width) - 1),
                                         "error": rsp.get("error", 0)}
        for n, exp in exp_route.items():
            got = None if outs[n] is None else c[n].unpack(outs[n])
            assert got == exp, f"cycle {cyc}: {n} {got}, model {exp}"
        if rsp is not None:                           # (ready without a response is free)
            exp_ready = (ins["load_response"] if rsp["source"] == WriteSource.COMPUTE.value
                         else ins["dma_response"] if rsp["source"] == WriteSource.DMA.value
                         else True)
            assert outs["response"] == exp_ready, \
                f"cycle {cyc}: response.ready {outs['response']}, model {exp_ready}"
        got = c["status"].unpack(outs["status"])
        assert got == m.status(), f"cycle {cyc}: status {got}, model {m.status()}"
        got = m.errors_codec.unpack(outs["errors"])
        exp = {k: int(v) for k, v in m.errors.items()}
        assert got == exp, f"cycle {cyc}: errors {got}, model {exp}"
        got = m.stats_codec.unpack(outs["stats"])
        assert got == m.stats, f"cycle {cyc}: stats {got}, model {m.stats}"
        status = c["status"].unpack(outs["status"])
        self._bound(outs, ins, got_status=status)
        self._hold(outs)
        self.log.append((cyc, next((n for n in INPUTS if outs[n]), None), status))
        # advance
        taken_rsp = rsp if rsp is not None and outs["response"] else None
        m.step(requests=dict(self.pending), dram_ready=ins["dram"], occupancy=self.occupancy,
               response=taken_rsp, config=self.config, clear=self.clear,
               track_hold=self.track_hold)
        if pick is not None:
            self.grants[pick] += 1
            self.pending[pick] = None
        self.forced += bool(slot and forced)
        if taken_rsp is not None:
            self.pending["response"] = None
        self.config = None
        self._outs = outs

    def _bound(self, outs, ins, got_status):
        """The starvation bounds, from the RTL's outputs: count the issue slots each pending
        communication request goes without a grant, and the slots ``track_hold`` held it
        back in (:func:`hold_bounds`)."""
        slot = outs["dram"] is None or ins["dram"]
        bound = starvation_bound(got_status["policy"], self.model.cfg["starvation_limit"])
        steady = self.config is None and self.model.staged is None
        comm_granted = outs["dma"] or outs["remote"]
        remote_held = (self.track_hold and self.pending["remote"] is not None
                       and self.pending["remote"]["tracked"])
        for key, pending, granted, held in (
                ("comm", self.pending["dma"] or self.pending["remote"], comm_granted,
                 remote_held and self.pending["dma"] is None),
                ("dma", self.pending["dma"], outs["dma"], False),
                ("remote", self.pending["remote"], outs["remote"], remote_held)):
            if not pending or granted or not steady or bound is None:
                self._wait[key] = self._holds[key] = 0
                continue
            if slot:
                self._wait[key] += 1
                self._holds[key] += bool(held)
                worst = self.worst_held if self._holds[key] else self.worst
                worst[key] = max(worst[key], self._wait[key])
                limit = hold_bounds(bound, self._holds[key])[key != "comm"]
                assert self._wait[key] <= limit, \
                    f"cycle {self.cycle}: {key} waited {self._wait[key]} issue slots, bound " \
                    f"{limit} ({ArbPolicy(got_status['policy']).name}, " \
                    f"{self._holds[key]} held)"

    def _hold(self, outs):
        """From the RTL's outputs: no tracked write is granted while ``track_hold`` is high,
        and a cycle with ``track_hold`` high is followed, within 2 cycles, by one without a
        ``track`` write."""
        for n in ("store", "remote"):
            assert not (outs[n] and self.track_hold and self.pending[n]["tracked"]), \
                f"cycle {self.cycle}: tracked {n} write granted with track_hold high"
        self._track_hist.append((self.track_hold, outs["track"] is not None))
        self.track_log.append((self.cycle, self.track_hold, outs["track"] is not None))
        if len(self._track_hist) == 3 and self._track_hist[0][0]:
            assert not (self._track_hist[1][1] and self._track_hist[2][1]), \
                f"cycle {self.cycle}: track_hold high in cycle {self.cycle - 2}, " \
                f"track writes in both cycles after it"

    def done(self):
        """Random traffic over, every request granted, nothing scripted."""
        return (self.cycle >= self.cycles and not self.scripted
                and all(self.pending[n] is None for n in INPUTS + ("response",))
                and self.model.out is None)


# --- scenarios, shared by the amaranth.sim tests and the cocotb testbench ---------------------

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
