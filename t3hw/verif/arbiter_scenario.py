# SPDX-License-Identifier: Apache-2.0
"""The arbitration policies side by side: the same deterministic traffic, closed-loop, on
the arbiter's RTL (amaranth.sim), scored against :class:`~sim_models.arbiter.ArbiterModel`
every cycle.

Traffic (:class:`Traffic`), identical under every policy:

* **compute**, a GEMM-like stream of ``tiles`` tiles. Each tile issues ``loads_per_tile``
  reads back to back (a memory-intensive phase), waits until every one of them has returned
  through the arbiter's ``load_response``, computes for ``compute_cycles`` cycles without a
  request, then queues ``stores_per_tile`` tracked stores (its output tile), issued while
  the next tile's reads start. The stream is closed-loop: a tile's compute phase starts only
  when its reads are back, so it waits longer when its reads wait behind others in the DRAM.
* **communication**, a burst in the middle of the run, as when the first output tiles
  complete: from cycle ``comm_start`` the DMA has ``dma_reads`` reads to issue back to back,
  and ``remote_updates`` updates arrive from the network, one every ``remote_interval``
  cycles, into a receive FIFO that feeds ``remote``. Arrival times do not depend on the
  arbiter.
* **the DRAM**: a FIFO queue. A request enters it when the DRAM takes it from ``dram``
  (``ready`` while fewer than ``capacity`` requests are in it); it is served no earlier than
  ``latency`` cycles after it entered, one request per ``service`` cycles, in order; a read's
  response then goes back through the arbiter's ``response``. The arbiter's ``occupancy``
  input is the number of requests in the queue (taken and not yet served), so it depends on
  what the arbiter granted. Its saturation occupancy (bandwidth-delay product) is
  ``latency / service`` requests, the ``mca_saturation`` the arbiter is given.

:class:`ScenarioEnv` is an :class:`~t3hw.verif.arbiter_env.ArbiterEnv` whose random stimulus is
replaced by this traffic; its scoreboard (every ready, the DRAM request, the routed responses,
the tracker write, the status, the errors and every counter against the model, the
starvation bound from the RTL's outputs) runs unchanged. It records per cycle the class
granted, the occupancy and the status. :func:`run_scenario` runs every policy of
:data:`POLICIES`; :func:`plot` and :func:`table` show the result (``t3hw arbiter-plot``).
"""

import collections
import json
import random
from dataclasses import asdict, dataclass, replace

from t3hw.spec.layouts import ArbPolicy, WriteKind, WriteSource
from t3hw.spec.params import EngineParams

from .arbiter_env import ArbiterEnv


__all__ = ["Traffic", "POLICIES", "DEFAULT_CYCLES", "MIN_CYCLES", "MAX_CYCLES",
           "STARVATION_LIMIT", "WINDOW_LOG2", "scenario_params", "ScenarioEnv", "run_policy",
           "run_scenario", "table", "plot", "write_json"]

#: Cycles per policy of ``t3hw arbiter-plot`` by default, and the range it accepts.
DEFAULT_CYCLES = 4000
MIN_CYCLES, MAX_CYCLES = 1000, 100_000


@dataclass(frozen=True)
class Traffic:
    """The scenario's traffic and DRAM (see the module docstring). Defaults fill
    :data:`DEFAULT_CYCLES` cycles; :meth:`for_cycles` scales them."""
    tiles: int = 16
    loads_per_tile: int = 24
    stores_per_tile: int = 8
    compute_cycles: int = 120
    comm_start: int = 700
    dma_reads: int = 160
    remote_updates: int = 160
    remote_interval: int = 3
    service: int = 2
    latency: int = 20
    capacity: int = 32

    @property
    def saturation(self):
        """The DRAM's bandwidth-delay product, in requests."""
        return self.latency // self.service

    @property
    def compute_requests(self):
        return self.tiles * (self.loads_per_tile + self.stores_per_tile)

    @property
    def comm_requests(self):
        return self.dma_reads + self.remote_updates

    @classmethod
    def for_cycles(cls, cycles):
        """The default traffic with its amounts scaled to a run of ``cycles`` cycles."""
        d, f = cls(), cycles / DEFAULT_CYCLES
        return replace(d, tiles=max(2, round(d.tiles * f)),
                       comm_start=round(d.comm_start * f),
                       dma_reads=max(4, round(d.dma_reads * f)),
                       remote_updates=max(4, round(d.remote_updates * f)))


#: The runs compared: ``(key, label, policy, threshold)``; threshold ``None`` leaves the
#: policy's threshold unused, ``0`` lets the arbiter derive it.
POLICIES = (
    ("round_robin",    "round-robin",               ArbPolicy.ROUND_ROBIN,   None),
    ("compute_first",  "compute-first",             ArbPolicy.COMPUTE_FIRST, None),
    ("t3_mca",         "T3-MCA, threshold 10",      ArbPolicy.T3_MCA,        10),
    ("t3_mca_derived", "T3-MCA, derived threshold", ArbPolicy.T3_MCA,        0),
    ("t3_mca_rr",      "T3-MCA-RR, threshold 10",   ArbPolicy.T3_MCA_RR,     10),
)

#: Arbiter parameters besides the policy and threshold (saturation comes from the DRAM).
STARVATION_LIMIT = 32
WINDOW_LOG2 = 8


def scenario_params(traffic, policy, threshold):
    """The :class:`EngineParams` of one run: the policy and threshold after reset, a 6-bit
    occupancy, ``mca_saturation`` the DRAM's bandwidth-delay product, a window of
    ``2**WINDOW_LOG2`` cycles and a starvation limit of ``STARVATION_LIMIT`` slots."""
    return EngineParams(arbiter_policy=policy.value, mca_threshold=threshold or 0,
                        occupancy_width=6, mca_saturation=traffic.saturation,
                        mca_window_log2=WINDOW_LOG2, starvation_width=8,
                        starvation_limit=STARVATION_LIMIT)


class ScenarioEnv(ArbiterEnv):
    """The scenario's traffic and DRAM around the arbiter, with :class:`ArbiterEnv`'s
    cycle-exact scoreboard.

    Attributes (after the run)
    --------------------------
    granted : list of str
        Per cycle: ``"c"`` a compute grant, ``"m"`` a communication grant, ``"."`` none.
    occupancy_log, threshold_log, measuring_log, starved_log : list of int
        Per cycle: the occupancy driven, the status threshold and ``measuring`` flag and the
        ``starved`` counter read from the RTL.
    finish : dict
        ``compute`` / ``comm``: the cycle in which the DRAM served the stream's last request
        (None: not within the run).
    """

    def __init__(self, params, traffic, cycles):
        super().__init__(params, random.Random(0), cycles=0, stall=0, hold=False)
        self.t, self.run_cycles = traffic, cycles
        # compute stream
        self.tile = 0
        self.phase = "load"
        self.to_issue = traffic.loads_per_tile        # reads of the tile not yet granted
        self.returned = 0                             # reads of the tile returned
        self.compute_until = None
        self.stores = collections.deque()             # tile ids of the stores to issue
        # communication
        self.dma_left = traffic.dma_reads
        self.arrived = 0
        self.rx = collections.deque()
        # DRAM
        self.queue = collections.deque()              # (earliest serve cycle, request)
        self.next_serve = 0
        self.responses = collections.deque()
        self.served = {"compute": 0, "comm": 0}
        self.finish = {"compute": None, "comm": None}
        # records
        self.granted = []
        self.occupancy_log, self.threshold_log, self.measuring_log = [], [], []
        self.starved_log = []
        self.last_stats = None

    # -- stimulus --------------------------------------------------------------------------
    def inputs(self):
        t, cyc, pend = self.t, self.cycle, self.pending
        if pend["load"] is None and self.phase == "load" and self.to_issue:
            pend["load"] = {"addr": (self.tile << 16) | (t.loads_per_tile - self.to_issue) << 6,
                            "bytes": self.p.burst_bytes,
                            "tag": (t.loads_per_tile - self.to_issue)
                            % (1 << self.p.load_tag_width)}
        if pend["store"] is None and self.stores:
            tile = self.stores[0]
            pend["store"] = {"addr": 1 << 40 | tile << 16, "bytes": self.p.burst_bytes,
                             "tile": tile % (1 << self.p.tile_width),
                             "kind": WriteKind.STORE.value, "tracked": 1}
            self.stores.popleft()
        if cyc >= t.comm_start:
            if pend["dma"] is None and self.dma_left:
                n = t.dma_reads - self.dma_left
                pend["dma"] = {"addr": 2 << 40 | n << 6, "bytes": self.p.burst_bytes,
                               "tag": n % (1 << self.p.read_tag_width)}
            if (self.arrived < t.remote_updates
                    and (cyc - t.comm_start) % t.remote_interval == 0):
                self.rx.append(self.arrived)
                self.arrived += 1
            if pend["remote"] is None and self.rx:
                n = self.rx.popleft()
                pend["remote"] = {"addr": 3 << 40 | n << 6, "bytes": self.p.burst_bytes,
                                  "tile": (1 << self.p.tile_width) - 1,
                                  "kind": WriteKind.UPDATE.value, "tracked": 1}
        if pend["response"] is None and self.responses:
            pend["response"] = self.responses.popleft()
        self.occupancy = len(self.queue)
        ins = {n: None if pend[n] is None else self.codecs[n].pack(**pend[n])
               for n in ("load", "store", "dma", "remote", "response")}
        ins.update(config=None, dram=self.occupancy < t.capacity, load_response=True,
                   dma_response=True, track=True, occupancy=self.occupancy, clear=0,
                   track_hold=0)
        return ins

    # -- scoring, then the traffic's and the DRAM's reaction -------------------------------
    def check(self, outs):
        cyc, t, ins = self.cycle, self.t, self._ins
        self.starved_log.append(self.model.stats["starved"])   # = the RTL's (checked below)
        super().check(outs)
        status = self.log[-1][2]
        self.occupancy_log.append(self.occupancy)
        self.threshold_log.append(status["threshold"])
        self.measuring_log.append(status["measuring"])
        self.last_stats = outs["stats"]
        g = self.log[-1][1]
        self.granted.append("c" if g in ("load", "store") else "m" if g else ".")
        if g == "load":
            self.to_issue -= 1
        elif g == "dma":
            self.dma_left -= 1
        # the DRAM takes the request shown on ``dram``; serves the head when it may
        if outs["dram"] is not None and ins["dram"]:
            self.queue.append((cyc + t.latency, self.codecs["dram"].unpack(outs["dram"])))
        if self.queue and self.queue[0][0] <= cyc and cyc >= self.next_serve:
            _, req = self.queue.popleft()
            self.next_serve = cyc + t.service
            stream = "compute" if req["source"] == WriteSource.COMPUTE.value else "comm"
            self.served[stream] += 1
            total = t.compute_requests if stream == "compute" else t.comm_requests
            if self.served[stream] == total:
                self.finish[stream] = cyc
            if req["op"] == 0:                                  # a read returns
                self.responses.append({"source": req["source"], "tag": req["tag"]})
        # the compute stream: a tile computes once its reads are back
        if outs["load_response"] is not None:
            self.returned += 1
        if self.phase == "load" and not self.to_issue and self.returned == t.loads_per_tile:
            self.phase, self.compute_until = "compute", cyc + t.compute_cycles
        elif self.phase == "compute" and cyc + 1 >= self.compute_until:
            self.stores.extend([self.tile] * t.stores_per_tile)
            self.tile += 1
            self.phase = "load" if self.tile < t.tiles else "done"
            self.to_issue, self.returned = t.loads_per_tile, 0

    # -- results ---------------------------------------------------------------------------
    def summary(self):
        """The run's numbers: finish cycles, stall cycles and forced grants from the RTL's
        counters, grant totals, and the threshold in effect at the end."""
        stats = self.model.stats_codec.unpack(self.last_stats)
        return {
            "compute_finish": self.finish["compute"],
            "comm_finish": self.finish["comm"],
            "compute_stalls": stats["stalls_load"] + stats["stalls_store"],
            "comm_stalls": stats["stalls_dma"] + stats["stalls_remote"],
            "forced": stats["starved"],
            "compute_grants": stats["grants_load"] + stats["grants_store"],
            "comm_grants": stats["grants_dma"] + stats["grants_remote"],
            "threshold": self.threshold_log[-1],
        }


def run_policy(traffic, policy, threshold, cycles):
    """Run the traffic for ``cycles`` cycles on :class:`t3hw.hw.arbiter.Arbiter` in
    amaranth.sim; returns the :class:`ScenarioEnv` (an AssertionError if the RTL and the
    model disagree in any cycle)."""
    from .amsim import run_env
    from t3hw.hw.arbiter import Arbiter

    params = scenario_params(traffic, policy, threshold)
    env = ScenarioEnv(params, traffic, cycles)

    async def body(env, cycle):
        for _ in range(cycles):
            await cycle()

    return run_env(Arbiter(params), env, body)


def run_scenario(cycles=DEFAULT_CYCLES, traffic=None, policies=POLICIES):
    """Every run of ``policies`` on the same traffic: ``{key: (label, ScenarioEnv)}``."""
    traffic = traffic if traffic is not None else Traffic.for_cycles(cycles)
    return {key: (label, run_policy(traffic, policy, thr, cycles))
            for key, label, policy, thr in policies}


_COLUMNS = (("compute_finish", "compute finish"), ("comm_finish", "comm finish"),
            ("compute_stalls", "compute stalls"), ("comm_stalls", "comm stalls"),
            ("forced", "forced"), ("threshold", "threshold"))


def table(runs):
    """The numbers of :func:`run_scenario`'s runs as a text table (``-``: not finished)."""
    head = ["policy"] + [h for _, h in _COLUMNS]
    rows = [head]
    for key, (label, env) in runs.items():
        s = env.summary()
        thr = "-" if "t3_mca" not in key else s["threshold"]
        rows.append([label] + ["-" if s[k] is None else str(s[k]) for k, _ in _COLUMNS[:-1]]
                    + [str(thr)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))) for r in rows)


def write_json(runs, path, traffic, cycles):
    """The configuration, every run's numbers and its per-cycle grants (``c`` compute, ``m``
    communication, ``.`` none) as JSON."""
    out = {"cycles": cycles, "traffic": asdict(traffic),
           "starvation_limit": STARVATION_LIMIT, "window_log2": WINDOW_LOG2,
           "runs": {key: {"label": label, **env.summary(), "grants": "".join(env.granted)}
                    for key, (label, env) in runs.items()}}
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def plot(runs, path, traffic, cycles):
    """One row per run: cumulative compute and communication grants over the cycles, the
    DRAM occupancy (and the threshold in effect under T3-MCA) on a second axis, the comm
    burst's arrival window shaded, the finish cycles marked and the run's numbers noted."""
    import itertools

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(8.5, 2.1 * len(runs) + 0.9),
                             sharex=True, squeeze=False)
    x = range(cycles)
    arrive_end = traffic.comm_start + traffic.remote_interval * (traffic.remote_updates - 1)
    for ax, (key, (label, env)) in zip(axes[:, 0], runs.items()):
        s = env.summary()
        comp = list(itertools.accumulate(g == "c" for g in env.granted))
        comm = list(itertools.accumulate(g == "m" for g in env.granted))
        occ = ax.twinx()
        occ.plot(x, env.occupancy_log, color="0.75", lw=0.6, label="DRAM occupancy")
        if "t3_mca" in key:
            thr = [None if m else th for th, m in zip(env.threshold_log, env.measuring_log)]
            occ.plot(x, thr, color="tab:red", lw=1, ls="--", label="threshold")
        occ.set_ylim(0, traffic.capacity * 2.2)
        occ.set_ylabel("occupancy", fontsize=8, color="0.45")
        occ.tick_params(labelsize=7, colors="0.45")
        ax.set_zorder(occ.get_zorder() + 1)
        ax.patch.set_visible(False)
        ax.axvspan(traffic.comm_start, arrive_end, color="tab:orange", alpha=0.08,
                   label="remote updates arriving")
        ax.plot(x, comp, color="tab:blue", lw=1.5, label="compute grants")
        ax.plot(x, comm, color="tab:orange", lw=1.5, label="comm grants")
        for cyc, color in ((s["compute_finish"], "tab:blue"), (s["comm_finish"], "tab:orange")):
            if cyc is not None:
                ax.axvline(cyc, color=color, lw=0.8, ls=":")
        fmt = lambda v: "not done" if v is None else f"cycle {v}"
        note = (f"compute stalls {s['compute_stalls']} cycles, done {fmt(s['compute_finish'])}"
                f"\ncomm done {fmt(s['comm_finish'])}, forced grants {s['forced']}")
        if "t3_mca" in key:
            note += f", threshold {s['threshold']}"
        ax.text(0.01, 0.95, note, transform=ax.transAxes, va="top", fontsize=7.5,
                bbox=dict(facecolor="white", edgecolor="0.8", alpha=0.9))
        ax.set_title(label, fontsize=9, loc="right")
        ax.set_ylabel("cumulative\ngrants", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylim(0, max(traffic.compute_requests, traffic.comm_requests) * 1.08)
        ax.set_xlim(0, cycles)
    handles = axes[0, 0].get_legend_handles_labels()
    occ_h = occ.get_legend_handles_labels()
    fig.legend(handles[0] + occ_h[0], handles[1] + occ_h[1], loc="lower center", ncol=5,
               fontsize=8, frameon=False)
    axes[-1, 0].set_xlabel("cycle")
    fig.suptitle(f"Arbiter RTL (amaranth.sim), same traffic per policy: {traffic.tiles} GEMM "
                 f"tiles, comm burst of {traffic.comm_requests} from cycle "
                 f"{traffic.comm_start}", fontsize=9.5)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
