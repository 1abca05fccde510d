# SPDX-License-Identifier: Apache-2.0
"""Reference model of the memory-controller arbiter (:mod:`t3hw.hw.arbiter`).

* :class:`ArbiterModel`: the arbiter's state and its rules (the policies, the round robin
  inside each class, the starvation counter, the tracked writes ``track_hold`` holds back,
  the threshold derivation, the configuration check, the response routing, the counters),
  stepped once per clock. Written from the rules in :mod:`t3hw.hw.arbiter`'s docstring,
  not from the RTL.
* :func:`config_ok`, :func:`derived_threshold`, :func:`starvation_bound`,
  :func:`hold_bounds`: the rules on their own.

The cycle-exact environment that drives and scores the RTL against the model is in
:mod:`t3hw.verif.arbiter_env`, the directed scenarios in :mod:`t3hw.verif.arbiter_directed`.

Field names come from :mod:`t3hw.spec.layouts` through :class:`~t3hw.spec.layouts.Codec`.
"""

from t3hw.spec.layouts import (MCA_POLICIES, ArbPolicy, MemOp, WriteKind, WriteSource,
                               arbiter_errors_layout, arbiter_stats_layout)
from t3hw.spec.contract import (ARBITER_FINISH_CYCLES as FINISH_CYCLES, MAX_WINDOW_LOG2,
                                arbiter_reset_config as reset_config)
from t3hw.spec.params import EngineParams

from .env import BlockModel


__all__ = ["MAX_WINDOW_LOG2", "INPUTS", "COMPUTE_INPUTS", "COMM_INPUTS", "config_ok",
           "reset_config", "ArbiterModel", "starvation_bound", "hold_bounds"]


#: The request inputs: compute (load, store), then communication (dma, remote).
INPUTS = ("load", "store", "dma", "remote")
COMPUTE_INPUTS, COMM_INPUTS = ("load", "store"), ("dma", "remote")


def config_ok(cfg):
    """Whether the arbiter accepts the configuration ``cfg`` (a dict of the fields of
    :func:`t3hw.spec.layouts.arbiter_config_layout`); a rejected one sets ``bad_config``."""
    return (cfg["policy"] in {p.value for p in ArbPolicy}
            and cfg["starvation_limit"] >= 1
            and cfg["window_log2"] <= MAX_WINDOW_LOG2
            and (cfg["threshold"] > 0 or cfg["saturation"] > 0))


def derived_threshold(saturation, window_log2, grants):
    """``ceil(saturation * (W + C) / (2 W))``, ``W = 2**window_log2``, ``C = grants``."""
    w = 1 << window_log2
    return -(-saturation * (w + grants) // (2 * w))


def starvation_bound(policy, limit):
    """Issue slots a pending communication request may go without a communication grant
    (None: unbounded)."""
    policy = ArbPolicy(policy)
    return 1 if policy == ArbPolicy.ROUND_ROBIN else limit if policy in MCA_POLICIES else None


def hold_bounds(bound, holds):
    """``(class, input)``: the issue slots the communication class, and one communication
    input, may go without a grant under a policy whose class bound is ``bound``
    (:func:`starvation_bound`), when ``track_hold`` held it back in ``holds`` of them (for the
    class: slots in which every pending communication request was a held tracked write;
    for an input: slots in which its own request was held). Each such slot costs the class
    one slot, and an input one turn of its class (``bound + 1`` slots)."""
    return bound + holds, 2 * bound + 1 + (bound + 1) * holds


class ArbiterModel(BlockModel):
    """Cycle model of :class:`t3hw.hw.arbiter.Arbiter`.

    Each cycle: :meth:`decide` with the valid inputs and the DRAM's ready gives the grants
    (the readies), then :meth:`step` clocks with the cycle's occupancy, which T3-MCA's gate
    uses the cycle after (``below``). Requests and the DRAM request
    are dicts of layout fields.

    Attributes
    ----------
    cfg : dict
        The configuration in effect.
    out : dict or None
        The DRAM request register (``None``: empty).
    track : dict or None
        The tracker write shown this cycle.
    """

    def __init__(self, params: EngineParams = None):
        super().__init__(params, arbiter_errors_layout, arbiter_stats_layout)
        p = self.params
        self.cfg = reset_config(p)
        self.armed = self.cfg["threshold"] == 0
        self.window, self.finish = False, 0           # finish: cycles left after the window
        self.thr = self.cfg["threshold"]
        self.count = self.window_grants = 0          # window cycles, compute grants in it
        self.wait = 0
        self.last_comm = self.last_store = self.last_remote = False
        self.out, self.out_tracked, self.track = None, False, None
        self.counted = []                            # counter events of the last cycle
        self.below = True                            # last cycle's occupancy + 1 < threshold
        self.below2 = True                           # last cycle's occupancy + 2 < threshold
        self.rr_below = True                         # below2 of the cycle before (T3_MCA_RR)
        self.staged = None                           # a configuration accepted last cycle

    @property
    def measuring(self):
        """The threshold is being derived."""
        return self.armed or self.window or self.finish > 0

    def status(self):
        return {"policy": self.cfg["policy"], "threshold": self.thr,
                "measuring": int(self.measuring)}

    # -- one cycle -----------------------------------------------------------------------
    @staticmethod
    def held(requests, track_hold):
        """The inputs whose request ``track_hold`` holds back this cycle: the tracked writes
        (``store`` and ``remote`` requests with ``tracked`` set). ``requests`` is
        ``{input: fields or None}``."""
        if not track_hold:
            return frozenset()
        return frozenset(n for n in ("store", "remote")
                         if requests[n] is not None and requests[n]["tracked"])

    def decide(self, valid, dram_ready, held=frozenset()):
        """The grants of this cycle: ``(granted input or None, forced, slot)``.

        ``valid`` is ``{input: bool}``; ``held`` the inputs :meth:`held` holds back, which
        the decision treats as not requesting. T3-MCA's gate looks at the occupancy of the
        cycle before plus one (``below``, set by :meth:`step`), not this cycle's.
        """
        slot = self.out is None or dram_ready
        valid = {n: v and n not in held for n, v in valid.items()}
        cp = valid["load"] or valid["store"]
        mp = valid["dma"] or valid["remote"]
        policy, forced = ArbPolicy(self.cfg["policy"]), False
        if policy == ArbPolicy.ROUND_ROBIN:
            cls = ("compute" if cp and (not mp or self.last_comm)
                   else "comm" if mp else None)
        elif policy in MCA_POLICIES:
            if mp and self.wait >= self.cfg["starvation_limit"]:
                cls, forced = "comm", True               # also while deriving
            elif (policy == ArbPolicy.T3_MCA_RR and mp and not self.measuring
                  and self.rr_below and not self.last_comm):
                cls = "comm"                             # its round-robin turn, gate open
            elif cp:
                cls = "compute"
            elif mp and (self.measuring or self.below):  # last cycle's occupancy
                cls = "comm"
            else:
                cls = None
        else:                                            # compute-first
            cls = "compute" if cp else "comm" if mp else None
        if not slot or cls is None:
            return None, forced, slot
        if cls == "compute":
            first, second, last = "load", "store", self.last_store
        else:
            first, second, last = "dma", "remote", self.last_remote
        pick = second if valid[second] and (not valid[first] or not last) else first
        return pick, forced, slot

    @staticmethod
    def request(name, fields):
        """The DRAM request of input ``name``'s request ``fields``, and whether it is tracked."""
        req = {"op": MemOp.READ.value, "source": WriteSource.COMPUTE.value, "addr": fields["addr"],
               "bytes": fields["bytes"], "tile": 0, "tag": 0}
        op = (MemOp.UPDATE.value if fields.get("kind") == WriteKind.UPDATE.value
              else MemOp.STORE.value)
        if name == "load":
            req["tag"] = fields["tag"]
            return req, False
        if name == "store":
            req.update(op=op, tile=fields["tile"])
            return req, bool(fields["tracked"])
        if name == "dma":
            req.update(source=WriteSource.DMA.value, tag=fields["tag"])
            return req, False
        req.update(op=op, source=WriteSource.REMOTE.value, tile=fields["tile"])
        return req, bool(fields["tracked"])

    def step(self, *, requests, dram_ready, occupancy, response=None, config=None, clear=0,
             track_hold=False):
        """Clock once. ``requests`` is ``{input: fields or None}``; returns the input granted
        (or None). ``response`` is the DRAM response's fields when valid and taken or
        dropped; ``config`` a configuration presented this cycle; ``track_hold`` holds back
        the tracked writes (:meth:`held`)."""
        valid = {n: requests[n] is not None for n in INPUTS}
        pick, forced, slot = self.decide(valid, dram_ready,
                                         self.held(requests, track_hold))
        mp = valid["dma"] or valid["remote"]
        events = set()
        # counters: they count the previous cycle's grants and stalls
        for name in self.counted:
            self._bump(name)
        self.counted = [f"grants_{n}" if n == pick else f"stalls_{n}" for n in INPUTS if valid[n]]
        if slot and forced:
            self.counted.append("starved")
        # the tracker write: the request the DRAM takes now
        out = self.out
        self.track = None
        if out is not None and dram_ready and self.out_tracked and out["op"] != MemOp.READ.value:
            self.track = {"tile": out["tile"], "beats": 1,
                          "kind": int(out["op"] == MemOp.UPDATE.value), "source": out["source"]}
        # the output register, pointers, wait
        grant_c, grant_m = pick in COMPUTE_INPUTS, pick in COMM_INPUTS
        if slot:
            if pick is None:
                self.out = None
            else:
                self.out, self.out_tracked = self.request(pick, requests[pick])
        if grant_c:
            self.last_store = pick == "store"
        if grant_m:
            self.last_remote = pick == "remote"
        if pick is not None:
            self.last_comm = grant_m
        if not mp or grant_m:
            self.wait = 0
        elif slot and self.wait < self.cfg["starvation_limit"]:
            self.wait += 1
        # responses
        if response is not None and response["source"] not in (WriteSource.COMPUTE.value,
                                                                WriteSource.DMA.value):
            events.add("bad_response")
        # the occupancy compare the next cycle's decision uses, with this cycle's threshold;
        # one more for the request this cycle's grant may add to the DRAM's queue
        self.below = occupancy + 1 < self.thr
        # T3_MCA_RR's round-robin turn: the compare of two requests more, one cycle older
        self.rr_below, self.below2 = self.below2, occupancy + 2 < self.thr
        # configuration (checked now, in effect from the cycle after next), derivation
        staged, self.staged = self.staged, None
        if config is not None and not config_ok(config):
            events.add("bad_config")
        elif config is not None:
            self.staged = dict(config)
        if staged is not None:
            self.cfg = staged
            self.thr = staged["threshold"]
            self.armed, self.window, self.finish = staged["threshold"] == 0, False, 0
        elif self.armed and grant_c:
            self.armed, self.window_grants = False, 1
            if self.cfg["window_log2"] == 0:
                self.finish, self.count = FINISH_CYCLES, 0
            else:
                self.window, self.count = True, 1
        elif self.window:
            last = self.count == (1 << self.cfg["window_log2"]) - 1
            self.count += 1
            if grant_c:
                self.window_grants += 1
            if last:
                self.window, self.finish = False, FINISH_CYCLES
        elif self.finish:
            self.finish -= 1
            if not self.finish:
                self.thr = derived_threshold(self.cfg["saturation"], self.cfg["window_log2"],
                                             self.window_grants)
        # sticky errors
        for name in self.errors:
            if clear >> self.errors_codec.names.index(name) & 1:
                self.errors[name] = False
        for name in events:
            self.errors[name] = True
        return pick
