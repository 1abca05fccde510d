# SPDX-License-Identifier: Apache-2.0
"""The cycle-exact environment of the memory-controller arbiter (:mod:`t3hw.hw.arbiter`),
scored against its reference model (:class:`sim_models.arbiter.ArbiterModel`). The directed
scenarios that run in it are in :mod:`t3hw.verif.arbiter_directed`.

* :class:`ArbiterEnv`: seeded random requests on the four inputs (in bursts and lulls),
  back-pressure from the DRAM and on the responses, a random-walk DRAM occupancy trace,
  a random ``track_hold``, random configuration writes (some of them bad) and error clears.
  Every cycle it compares every ready, the DRAM request, the routed responses, the tracker
  write, the status, the error bits and every counter with the model, and it checks from
  the RTL's outputs alone that no input is granted without a request, that the starvation
  bounds hold and what ``track_hold`` promises.

Field names come from :mod:`t3hw.spec.layouts` through :class:`~t3hw.spec.layouts.Codec`.
"""

from collections import deque

from t3hw.spec.layouts import (WINDOW_LOG2_WIDTH, ArbPolicy, Codec, WriteSource,
                               arbiter_config_layout, arbiter_status_layout, load_layout,
                               load_response_layout, mem_request_layout, mem_response_layout,
                               mem_store_layout, read_request_layout, read_response_layout,
                               write_layout)
from t3hw.spec.contract import MAX_WINDOW_LOG2, arbiter_reset_config as reset_config

from sim_models.arbiter import INPUTS, ArbiterModel, hold_bounds, starvation_bound

from .env import Stall, StreamEnv


#: Cycles of history :class:`ArbiterEnv` keeps for the directed scenarios.
LOG_CYCLES = 4096

__all__ = ["LOG_CYCLES", "ArbiterEnv"]


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
