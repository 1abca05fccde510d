# SPDX-License-Identifier: Apache-2.0
"""The fast co-simulation's top: the N engines of :class:`~t3hw.hw.system.System` with their
GPU cores, DRAMs and ring as simulation-only HDL.

:class:`FastSystem` connects, per GPU ``i``, :class:`~t3hw.verif.simhdl.gpu.GpuHdl` to engine
``i``'s ``load``, ``load_response`` and ``store`` ports,
:class:`~t3hw.verif.simhdl.dram.FixedDram` (or, with ``memory="hbm"``,
:class:`~t3hw.verif.simhdl.hbm.HbmDramHdl`) to its ``dram``, ``dram_response`` and
``occupancy``, and :class:`~t3hw.verif.simhdl.ring.RingHdl` to every engine's ``net_tx`` and
``net_rx``: the connections :class:`sim_models.cosim.SystemEnv` makes in Python, cycle by
cycle, in the exact co-simulation (:mod:`t3hw.verif.cosim_tb`). What is left to Python
(:mod:`t3hw.verif.cosim_fast_tb`) is what is not per cycle:

* programming every engine over its register bus (``e<i>__bus__*``), as in the exact mode;
* the GEMM's tiles and the L2 model, at tile events: a GPU's ``retire`` and ``dispatch`` masks
  say which compute units retire a tile and take a new one this cycle; Python answers on
  ``desc`` (each new tile's loads, first load address and stores) before the cycle ends
  (``stamp`` changes whenever some GPU has an event, so the testbench sleeps on it);
* the data: every request a DRAM serves and every packet an engine sends is on the ``log<i>``
  ports, which the simulation shell writes to a file (``t3hw.tools.cosim_fast``), and the
  testbench replays the stores, packets and near-memory additions in numpy afterwards.

The engines, GPUs and DRAMs of one top are identical, so each is one Verilog module
(:data:`ENGINE`, :data:`GPU`, :data:`DRAM`, :meth:`FastSystem.modules`) that the top
instantiates N times: generating and Verilating a top costs one engine, not N, and
Verilator, which does not inline a large module instantiated more than once, runs one copy of
the engine's code for all N.

Nothing before ``run`` rises: ``cycle`` counts from 0 at the first cycle with ``run`` high,
which the testbench raises where the exact mode's loop starts. The scenario is not in the
HDL: its sizes (``g<i>__tiles``, ``g<i>__compute``, ``result_base``, ``r_expected``) are
inputs written before the run, so one build serves every scenario of the same hardware
(:func:`hardware_key`).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from t3hw.hw.csr_bus import BusSignature
from t3hw.hw.engine import Engine
from t3hw.hw.ports import module_ports
from t3hw.hw.system import check_engines
from t3hw.spec.regmap import RegisterMap

from .dram import CYCLE_WIDTH, FixedDram
from .gpu import GpuHdl
from .hbm import HbmDramHdl
from .ring import RingHdl


__all__ = ["FastSystem", "check_fast", "check_parts"]

#: The Verilog module of each block that a :class:`FastSystem` has once per GPU. The engines,
#: GPUs and DRAMs of one top are identical, so each is generated once and instantiated N
#: times (:meth:`FastSystem.modules`), not generated N times as N modules of the same text.
ENGINE, GPU, DRAM = "t3hw_fast_engine", "t3hw_fast_gpu", "t3hw_fast_dram"


def check_fast(cfg):
    """Raise ``ValueError`` if the fast co-simulation cannot run ``cfg`` exactly: it has no
    random refusals, jitter or reordering."""
    for name, value, want in (("dram_stall", cfg.dram_stall, 0),
                              ("net_jitter", cfg.net_jitter, 0), ("reorder", cfg.reorder, False)):
        if value != want:
            raise ValueError(f"{name} must be {want!r} in the fast co-simulation (the exact "
                             f"one, --exact, runs every setting), not {value!r}")


#: Fewest cycles of link latency a run split over processes needs: each process may run
#: ahead of the one whose packets it receives by the latency less this (``docs/cosim.md``,
#: "Split over processes").
SPLIT_MIN_LATENCY = 32


def check_parts(cfg, parts):
    """Raise ``ValueError`` unless ``cfg``'s ring can be split into ``parts`` processes of
    the same number of GPUs (``docs/cosim.md``, "Split over processes")."""
    n = cfg.gpus
    if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= n \
            or n % parts:
        raise ValueError(f"parts must be a divisor of the ring size {n} (1 to {n}), not "
                         f"{parts!r}")
    if parts > 1 and cfg.link_latency < SPLIT_MIN_LATENCY:
        raise ValueError(f"a run split over processes needs link_latency of at least "
                         f"{SPLIT_MIN_LATENCY} cycles, not {cfg.link_latency}")


def _log_signature(p):
    return wiring.Signature({
        "serve_valid": Out(1), "serve_op": Out(2), "serve_source": Out(2),
        "serve_addr": Out(p.addr_width), "serve_bytes": Out(p.burst_width),
        "tx_valid": Out(1), "tx_kind": Out(1), "tx_tile": Out(p.tile_width),
    })


#: Most packets a ring link holds in flight and waiting at its receiver (the ring's words
#: are cheap in Verilator, and generated once per hardware). A GPU whose engine takes no
#: received packet for long enough makes more wait; the ring's sticky error bit then fails
#: the run (``--exact`` has no such limit).
WIRE_DEPTH_MAX = 1 << 16

#: Fewest tiles each GPU's write buffer holds (its depth is every tile of the GEMM, rounded
#: up to a power of two, at least this): layers of different widths share a build (the
#: Mega-GPT-2 and T-NLG sub-layers of ``t3hw paper --rtl``, 768 and 1,072 tiles per GPU at 512
#: tokens). Not more: the memory's initial value is generated into the Verilog, and at 65,536
#: tiles generating 16 GPUs' top took longer than Verilating it.
WB_DEPTH_MIN = 1 << 12

#: Fewest tiles the write buffer holds in a top of one GPU (a part of a split ring, or GPU 0
#: of a symmetric one: ``t3hw paper --rtl --full``), where one memory's initial value costs
#: little: every paper sub-layer at its own 8192 tokens (12,288 and 17,152 tiles per GPU)
#: then shares the build of its ring size, and a profile-guided build trains on the fewest
#: tokens of the ring (:func:`t3hw.tools.pgo.training_config`), not on most of the layer.
WB_DEPTH_ONE_MIN = 1 << 15


def hardware_key(cfg, parts=1):
    """What a :class:`FastSystem` for ``cfg`` (in ``parts`` processes) is built from:
    scenarios with the same key share one simulation build (the workload, policy, collective
    and seed are not in it, nor which part of the ring a process runs)."""
    tiles = cfg.shape.m // cfg.tile_m * -(-cfg.shape.n // cfg.tile_n)
    # every packet a GPU sends may wait at its neighbour's port (under compute-first, the
    # GEMM's loads hold the received updates back): less than its output in the
    # reduce-scatter, and again in the all-gather
    sent = 2 * cfg.shape.m * cfg.shape.n * cfg.gpu.elem_bytes // cfg.params.burst_bytes
    return {"gpus": cfg.gpus, "params": cfg.params.to_dict(), "cus": cfg.cus,
            "memory": cfg.memory,
            "dram_latency": cfg.dram_latency, "link_bytes_per_cycle": cfg.link_bytes_per_cycle,
            "link_latency": cfg.link_latency, "tx_buffer_bytes": cfg.tx_buffer_bytes,
            "wb_depth": max(WB_DEPTH_ONE_MIN if cfg.gpus == parts else WB_DEPTH_MIN,
                            1 << tiles.bit_length()),
            "wire_depth": min(1 << max(9, sent.bit_length()), WIRE_DEPTH_MAX),
            **({"parts": parts} if parts > 1 else {})}


def _ports_of(block):
    """``block``, used for its members only (an instance's ports): never elaborated, and not
    to be warned about as unused."""
    block._MustUse__used = True
    return block


def _instance(module, component):
    """An instance of ``module``, the Verilog of a block like ``component``, bound to
    ``component``'s members (which the top then connects as if it were the block)."""
    kwargs = {f"{d}_{name}": value for name, (d, value) in module_ports(component).items()}
    return Instance(module, i_clk=ClockSignal(), i_rst=ResetSignal(), **kwargs)


class SharedSystem(wiring.Component):
    """:class:`~t3hw.hw.system.System`'s ports around ``n`` instances of one Verilog module,
    ``module``, the engine for ``params`` generated on its own: the exact co-simulation's
    top (:func:`t3hw.tools.cosim._system_verilog`), whose Verilog then holds the engine once.

    Members
    -------
    e0, e1, ... : Out(Engine(params).signature)
        Engine ``i``'s ports, with the engine's directions.
    """

    def __init__(self, params, n, module):
        check_engines(params, n, self)
        self._module = module
        self._engines = [_ports_of(Engine(params)) for _ in range(n)]
        super().__init__({f"e{i}": Out(e.signature) for i, e in enumerate(self._engines)})

    def elaborate(self, platform):
        m = Module()
        for i, eng in enumerate(self._engines):
            m.submodules[f"e{i}"] = _instance(self._module, eng)
            connect(m, flipped(getattr(self, f"e{i}")), eng)
        return m


class FastSystem(wiring.Component):
    """N engines and their GPU, DRAM and ring models (module docstring).

    Parameters
    ----------
    cfg : CosimConfig
        The scenario (:func:`check_fast` must accept it); only its hardware
        (:func:`hardware_key`) is used.
    parts : int
        1 (the default): the whole ring. Else a divisor of ``cfg.gpus`` (:func:`check_parts`):
        this top holds ``cfg.gpus // parts`` consecutive GPUs of the ring, the ``first`` of
        them given at run time, and a process runs each part (``docs/cosim.md``, "Split over
        processes"); the ring's packets to and from the other parts are on ``xout`` and
        ``xin``.

    Members
    -------
    run : In(1)
        The models start.
    result_base, r_expected : In(addr_width), In(48)
        Where the results start in every DRAM, and the bytes each must receive there.
    cycle, stamp, done, error : Out(40), Out(40), Out(1), Out(1)
        The cycle number; ``cycle + 1`` while some GPU has a tile event or the run is done,
        else 0; the run is done (:meth:`sim_models.cosim.SystemEnv.done`); some model's
        sticky error.
    e<i> : Out(Signature({"bus": In(BusSignature)}))
        Engine ``i``'s register bus.
    g<i> : Out(...)
        GPU ``i``'s inputs (``tiles``, ``compute``, ``desc``), event ports (``retire``,
        ``dispatch``), counters (``dispatched``, ``tiles_done``, ``store_wait``, ``packets``),
        its DRAM's ``r_writes`` and ``last_write``, and the error bits of its GPU and DRAM.
    log<i> : Out(...)
        The request its DRAM serves and the packet its engine sends, this cycle.
    first, xout, xin : In(range(cfg.gpus)), Out(...), In(...)
        Only in a part (``parts`` > 1): as :class:`~t3hw.verif.simhdl.ring.RingHdl`'s.
    done_since, xsent, xgot : Out(40), Out(32), Out(32)
        Only in a part: the first cycle of the latest stretch in which ``done`` (this part's
        GPUs finished, its wires idle) held; the packets sent on ``xout`` and taken from
        ``xin``. ``stamp`` then shows the cycle at which ``done`` rises, not every cycle in
        which it holds.
    """

    def __init__(self, cfg, parts=1):
        check_fast(cfg)
        check_parts(cfg, parts)
        hw = hardware_key(cfg, parts)
        p, n = cfg.params, cfg.gpus // parts
        self.n, self.parts = n, parts
        self._engine = lambda: Engine(p)
        self._gpu = lambda: GpuHdl(p, cus=cfg.cus, burst_bytes=p.burst_bytes,
                                   tag_width=p.load_tag_width, wb_depth=hw["wb_depth"])
        # responses wait for the engine: at most one per read outstanding, and an engine
        # has at most a load tag's worth of compute reads and max_outstanding DMA reads
        reads = (1 << p.load_tag_width) + p.max_outstanding
        depth = 1 << (reads - 1).bit_length()
        self._dram = (lambda: HbmDramHdl(p, rsp_depth=depth)) if cfg.memory == "hbm" else \
            (lambda: FixedDram(p, latency=cfg.dram_latency, rsp_depth=depth))
        # one of each per GPU: the instances' ports, connected as the blocks themselves
        self._engines = [_ports_of(self._engine()) for _ in range(n)]
        self._gpus = [_ports_of(self._gpu()) for _ in range(n)]
        self._drams = [_ports_of(self._dram()) for _ in range(n)]
        self._ring = RingHdl(p, n=n, bytes_per_cycle=cfg.link_bytes_per_cycle,
                             latency=cfg.link_latency, tx_bytes=cfg.tx_buffer_bytes,
                             wire_depth=hw["wire_depth"],
                             ring=None if parts == 1 else cfg.gpus)
        bus = BusSignature(RegisterMap(p).addr_width)
        members = {"run": In(1), "result_base": In(p.addr_width), "r_expected": In(48),
                   "cycle": Out(CYCLE_WIDTH), "stamp": Out(CYCLE_WIDTH),
                   "done": Out(1), "error": Out(1)}
        for i, g in enumerate(self._gpus):
            members[f"e{i}"] = Out(wiring.Signature({"bus": In(bus)}))
            members[f"g{i}"] = Out(wiring.Signature({
                "tiles": In(32), "compute": In(32), "desc": In(g.desc.shape()),
                "retire": Out(len(g.retire)), "dispatch": Out(len(g.dispatch)),
                "dispatched": Out(32), "tiles_done": Out(32), "store_wait": Out(32),
                "packets": Out(32), "r_writes": Out(48), "last_write": Out(CYCLE_WIDTH),
                "gpu_error": Out(len(g.error)), "dram_error": Out(2),
                "error_cycle": Out(CYCLE_WIDTH)}))
            members[f"log{i}"] = Out(_log_signature(p))
        members["ring_error"] = Out(len(self._ring.error))
        members["ring_error_cycle"] = Out(CYCLE_WIDTH)
        if parts > 1:
            ring = self._ring.signature.members
            members.update(first=In(range(cfg.gpus)), xout=Out(ring["xout"].signature),
                           xin=In(ring["xin"].signature), xroom=Out(1), xempty=Out(1),
                           done_since=Out(CYCLE_WIDTH), xsent=Out(32), xgot=Out(32))
        super().__init__(members)

    def modules(self):
        """``{module name: block}``: a fresh engine, GPU and DRAM, whose Verilog modules
        (:data:`ENGINE`, :data:`GPU`, :data:`DRAM`) the top instantiates once per GPU."""
        return {ENGINE: self._engine(), GPU: self._gpu(), DRAM: self._dram()}

    def elaborate(self, platform):
        m = Module()
        n = self.n
        m.submodules.ring = ring = self._ring
        m.d.comb += ring.cycle.eq(self.cycle)
        with m.If(self.run):
            m.d.sync += self.cycle.eq(self.cycle + 1)
        finished, event, errors = [], [], []
        for i in range(n):
            eng, g, d = self._engines[i], self._gpus[i], self._drams[i]
            m.submodules[f"e{i}"] = _instance(ENGINE, eng)
            m.submodules[f"g{i}"] = _instance(GPU, g)
            m.submodules[f"d{i}"] = _instance(DRAM, d)
            gp, lg = getattr(self, f"g{i}"), getattr(self, f"log{i}")
            connect(m, flipped(getattr(self, f"e{i}").bus), eng.bus)
            connect(m, g.load, eng.load)
            connect(m, eng.load_response, g.load_response)
            connect(m, g.store, eng.store)
            connect(m, eng.dram, d.req)
            connect(m, d.rsp, eng.dram_response)
            connect(m, eng.net_tx, getattr(ring, f"tx{i}"))
            connect(m, getattr(ring, f"rx{i}"), eng.net_rx)
            tx = eng.net_tx
            m.d.comb += [
                g.run.eq(self.run), g.cycle.eq(self.cycle), d.cycle.eq(self.cycle),
                d.result_base.eq(self.result_base), eng.occupancy.eq(d.occupancy),
                g.tiles.eq(gp.tiles), g.compute.eq(gp.compute), g.desc.eq(gp.desc),
                gp.retire.eq(g.retire), gp.dispatch.eq(g.dispatch),
                gp.dispatched.eq(g.dispatched),
                gp.tiles_done.eq(g.tiles_done), gp.store_wait.eq(g.store_wait),
                gp.packets.eq(getattr(ring, f"packets{i}")),
                gp.r_writes.eq(d.r_writes), gp.last_write.eq(d.last_write),
                gp.gpu_error.eq(g.error), gp.dram_error.eq(d.error),
                gp.error_cycle.eq(Mux(g.error != 0, g.error_cycle, d.error_cycle)),
                lg.serve_valid.eq(d.serve_valid), lg.serve_op.eq(d.serve.op),
                lg.serve_source.eq(d.serve.source), lg.serve_addr.eq(d.serve.addr),
                lg.serve_bytes.eq(d.serve.bytes),
                lg.tx_valid.eq(tx.valid & tx.ready), lg.tx_kind.eq(tx.payload.kind),
                lg.tx_tile.eq(tx.payload.tile),
            ]
            finished.append((d.r_writes >= self.r_expected) & d.idle & g.done)
            event.append(g.event)
            errors += [g.error != 0, d.error != 0]
        done = Cat(*finished).all() & ring.idle
        shown = self.done
        if self.parts > 1:
            shown = self._part(m, ring)
        m.d.comb += [
            self.done.eq(self.run & done),
            self.stamp.eq(Mux(Cat(*event).any() | shown, self.cycle + 1, 0)),
            self.error.eq(Cat(*errors, ring.error != 0).any()),
            self.ring_error.eq(ring.error), self.ring_error_cycle.eq(ring.error_cycle),
        ]
        return m

    def _part(self, m, ring):
        """A part's exchange with the other parts, ``done_since`` and its counters; returns
        the rise of ``done``, for ``stamp``."""
        done_q, rise = Signal(), Signal()
        m.d.comb += [ring.first.eq(self.first), rise.eq(self.done & ~done_q)]
        for name in ("valid", "arrival", "payload"):
            m.d.comb += [getattr(self.xout, name).eq(getattr(ring.xout, name)),
                         getattr(ring.xin, name).eq(getattr(self.xin, name))]
        m.d.comb += [self.xroom.eq(ring.xroom), self.xempty.eq(ring.xempty)]
        m.d.sync += [done_q.eq(self.done), self.xsent.eq(self.xsent + ring.xout.valid),
                     self.xgot.eq(self.xgot + self.xin.valid)]
        with m.If(rise):
            m.d.sync += self.done_since.eq(self.cycle)
        return rise
