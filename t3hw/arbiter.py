# SPDX-License-Identifier: Apache-2.0
"""The memory-controller arbiter: shares the DRAM between the compute and the communication
streams, and shows the tracker every write it issues.

Streams
-------
Four request inputs in two classes, one request stream out to the DRAM:

* **compute**: ``load`` (GEMM reads) and ``store`` (producer stores, from the address map);
* **communication**: ``dma`` (the DMA's comm-stream reads) and ``remote`` (stores and
  updates that arrived from a peer GPU, classified by the address map's ``rx`` lookup).

Each cycle in which the output register is free or being emptied (an *issue slot*) the
policy picks a class, and a round-robin pointer inside the class picks the input when both
of its inputs request. The granted request is registered: it shows on ``dram`` the next
cycle and stays there, unchanged, until the DRAM takes it. One request per cycle while
``dram.ready`` stays high.

Policies (``ArbPolicy``, chosen by the parameter ``arbiter_policy`` and by the ``ARB``
registers at run time)
---------------------------------------------------------------------------------------------
* ``ROUND_ROBIN`` (plain T3): when both classes request, the one not granted last goes.
* ``COMPUTE_FIRST``: compute whenever it requests; communication only in the other slots.
* ``T3_MCA``: in each issue slot, in this order:

  1. if communication has waited ``wait >= starvation_limit`` slots, it is granted
     (*forced*; counted in ``starved``);
  2. else compute, if it requests;
  3. else communication, if it requests and the DRAM ``occupancy`` is below ``threshold``;
  4. else nothing.

  ``wait`` counts the issue slots in which communication requested and was not granted; it
  is cleared by a communication grant and in any cycle without a communication request,
  and saturates at ``starvation_limit``.

Starvation bounds, in issue slots in which a communication request is pending:
``ROUND_ROBIN`` grants communication within 2 slots and ``T3_MCA`` within
``starvation_limit + 1`` (once its threshold is set; while it is being derived, T3-MCA is
compute-first); ``COMPUTE_FIRST`` has no bound. Inside a class the two inputs alternate, so
one input of a class waits at most twice its class's bound. No input is ever granted
without a request.

Threshold derivation (T3-MCA with ``threshold = 0``)
-------------------------------------------------
The threshold is derived from the compute request rate at the start of the GEMM. After
reset (with ``mca_threshold = 0``) or after a configuration with ``threshold = 0`` is
written, the arbiter waits for the first compute grant; the window is the ``W =
2**window_log2`` cycles starting with that cycle, and ``C`` the compute grants in it. From
the fourth cycle after the window (``FINISH_CYCLES``: a shift, an add and a shift, one per
cycle, so the computation is never a long path) the threshold is::

    threshold = ceil(saturation * (W + C) / (2 * W))       (= ceil(q_sat * (1 + rate) / 2))

where ``saturation`` (q_sat) is the occupancy at which the DRAM saturates, its
bandwidth-delay product in requests, and ``rate = C / W`` the compute share of the issue
slots. By Little's law the GEMM alone keeps ``n_gemm = rate * q_sat`` requests in the DRAM,
so this is ``ceil((n_gemm + q_sat) / 2)``: communication may fill the queue halfway from the
GEMM's own level to saturation. The derivation runs whatever the policy, and T3-MCA is
compute-first until it ends (``status.measuring``). The hardware accumulates
``saturation`` per compute grant (no multiplier) and divides by shifting.

Configuration
-------------
``config`` (from the register block) replaces the whole configuration in one cycle, or is
rejected with the ``bad_config`` event when its policy code is 3, ``starvation_limit`` is 0,
``window_log2`` is above 24, or ``threshold`` and ``saturation`` are both 0. An accepted one
with ``threshold = 0`` restarts the derivation.

Writes and the tracker
----------------------
When the DRAM takes a write (``STORE`` or ``UPDATE``) that is tracked (a producer store or a
received packet in a ``TRACKED`` region), ``track`` presents it to the tracker the next
cycle: its tile, one beat, its kind and its source. The tracker takes one write per cycle,
so this never stalls.

Responses
---------
``response`` carries the DRAM's read returns; each goes to ``load_response`` or
``dma_response`` by its ``source`` (passed through, with its ready). A response whose source
issues no reads is dropped with the ``bad_response`` event.
"""

from amaranth import *
from amaranth.hdl import Assume, Cover
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import (ArbPolicy, MemOp, WriteKind, WriteSource, arbiter_config_layout,
                      arbiter_errors_layout, arbiter_stats_layout, arbiter_status_layout,
                      load_layout, load_response_layout, mem_request_layout,
                      mem_response_layout, mem_store_layout,
                      read_request_layout, read_response_layout, write_layout)
from .params import EngineParams, check_params


__all__ = ["Arbiter", "MAX_WINDOW_LOG2", "FINISH_CYCLES", "reset_config", "formal_spec"]

#: Cycles after the window until the derived threshold is in effect (``status.measuring``
#: stays high through them): a shift, an add and a shift, each registered.
FINISH_CYCLES = 3

#: Largest ``window_log2`` the arbiter accepts (a window of 2**24 cycles).
MAX_WINDOW_LOG2 = 24


def reset_config(params: EngineParams):
    """The configuration after reset, as a dict of :func:`arbiter_config_layout` fields."""
    return {"policy": params.arbiter_policy, "threshold": params.mca_threshold,
            "saturation": params.mca_saturation, "window_log2": params.mca_window_log2,
            "starvation_limit": params.starvation_limit}


def config_ok(new):
    """Whether the arbiter accepts configuration ``new`` (a view of
    :func:`t3hw.layouts.arbiter_config_layout`): a known policy, a starvation limit of at
    least 1, a window of at most ``2**MAX_WINDOW_LOG2`` cycles, and a threshold or a
    saturation to derive one from."""
    return ((new.policy.as_value() != 3) & (new.starvation_limit != 0)
            & (new.window_log2 <= MAX_WINDOW_LOG2)
            & ((new.threshold != 0) | (new.saturation != 0)))


class Arbiter(wiring.Component):
    """Compute / communication arbiter in front of the DRAM.

    Parameters
    ----------
    params : EngineParams
        Field widths; ``occupancy_width``, ``starvation_width``, and the configuration after
        reset (``arbiter_policy``, ``mca_threshold``, ``mca_saturation``, ``mca_window_log2``,
        ``starvation_limit``).

    Members
    -------
    load : In(stream.Signature(load_layout))
        Compute reads.
    store : In(stream.Signature(mem_store_layout))
        Producer stores to local memory (the address map's ``mem``).
    dma : In(stream.Signature(read_request_layout))
        The DMA's comm-stream reads.
    remote : In(stream.Signature(mem_store_layout))
        Packets from the network, as local stores or updates (the address map's ``rx_mem``).
    dram : Out(stream.Signature(mem_request_layout))
        The requests, registered.
    occupancy : In(occupancy_width)
        Requests in the DRAM's queue (waiting and in service).
    response : In(stream.Signature(mem_response_layout))
        Read returns from the DRAM.
    load_response : Out(stream.Signature(load_response_layout))
        Returns of ``load`` requests.
    dma_response : Out(stream.Signature(read_response_layout))
        Returns of ``dma`` requests (to the DMA's ``response``).
    track : Out(stream.Signature(write_layout, always_ready=True))
        Tracked writes the DRAM took, one cycle later (to the tracker's ``write``).
    config : In(stream.Signature(arbiter_config_layout, always_ready=True))
        A new configuration (from the register block).
    status : Out(arbiter_status_layout)
        Policy and threshold in effect; whether the threshold is being derived.
    errors : Out(arbiter_errors_layout)
        Sticky error bits (set the cycle after the event).
    clear : In(arbiter_errors_layout)
        Clears the error bits that are 1.
    stats : Out(arbiter_stats_layout)
        Wrapping counters.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        p = params
        super().__init__({
            "load":          In(stream.Signature(load_layout(p))),
            "store":         In(stream.Signature(mem_store_layout(p))),
            "dma":           In(stream.Signature(read_request_layout(p))),
            "remote":        In(stream.Signature(mem_store_layout(p))),
            "dram":          Out(stream.Signature(mem_request_layout(p))),
            "occupancy":     In(p.occupancy_width),
            "response":      In(stream.Signature(mem_response_layout(p))),
            "load_response": Out(stream.Signature(load_response_layout(p))),
            "dma_response":  Out(stream.Signature(read_response_layout(p))),
            "track":         Out(stream.Signature(write_layout(p), always_ready=True)),
            "config":        In(stream.Signature(arbiter_config_layout(p), always_ready=True)),
            "status":        Out(arbiter_status_layout(p)),
            "errors":        Out(arbiter_errors_layout(p)),
            "clear":         In(arbiter_errors_layout(p)),
            "stats":         Out(arbiter_stats_layout(p)),
        })

    @property
    def params(self):
        return self._p

    def elaborate(self, platform):
        p = self._p
        m = Module()
        rst_cfg = reset_config(p)
        cfg = Signal(arbiter_config_layout(p), init=rst_cfg)
        set_err = Signal(arbiter_errors_layout(p))

        # --- threshold derivation state ---------------------------------------------------
        # ``armed``: waiting for the first compute grant; ``window``: inside the window;
        # ``finish``: the FINISH_CYCLES after it, when the threshold is computed, one
        # operation per cycle (see below).
        derive = rst_cfg["threshold"] == 0
        armed  = Signal(init=derive)
        window = Signal()
        finish = Signal(FINISH_CYCLES)                      # one-hot: which finish cycle
        thr    = Signal(p.occupancy_width, init=rst_cfg["threshold"])
        cw     = MAX_WINDOW_LOG2 + 1
        count  = Signal(cw)                                 # window cycles elapsed
        acc    = Signal(p.occupancy_width + cw)             # saturation * compute grants - 1
        measuring = armed | window | finish.any()

        # --- the class decision -----------------------------------------------------------
        slot = ~self.dram.valid | self.dram.ready
        cp = self.load.valid | self.store.valid
        mp = self.dma.valid | self.remote.valid
        wait = Signal(p.starvation_width)
        # ``wait >= cfg.starvation_limit``, kept as a register beside ``wait`` (updated with
        # it, below), so that no compare lies before the decision.
        wait_full = Signal()
        last_comm = Signal()                               # round robin: comm went last
        starving = mp & wait_full
        pick_c, pick_m, forced = Signal(), Signal(), Signal()
        with m.Switch(cfg.policy):
            with m.Case(ArbPolicy.ROUND_ROBIN):
                m.d.comb += [pick_c.eq(cp & (~mp | last_comm)),
                             pick_m.eq(mp & (~cp | ~last_comm))]
            with m.Case(ArbPolicy.T3_MCA):
                with m.If(measuring):
                    m.d.comb += [pick_c.eq(cp), pick_m.eq(~cp & mp)]
                with m.Elif(starving):
                    m.d.comb += [pick_m.eq(1), forced.eq(1)]
                with m.Else():
                    m.d.comb += [pick_c.eq(cp),
                                 pick_m.eq(~cp & mp & (self.occupancy < thr))]
            with m.Default():                              # COMPUTE_FIRST
                m.d.comb += [pick_c.eq(cp), pick_m.eq(~cp & mp)]
        grant_c = slot & pick_c
        grant_m = slot & pick_m

        # --- inside each class: alternate when both inputs request --------------------------
        last_store  = Signal()                             # compute: the store went last
        last_remote = Signal()                             # comm: the remote went last
        sel_store  = self.store.valid & (~self.load.valid | ~last_store)
        sel_remote = self.remote.valid & (~self.dma.valid | ~last_remote)
        m.d.comb += [
            self.load.ready.eq(grant_c & ~sel_store),
            self.store.ready.eq(grant_c & sel_store),
            self.dma.ready.eq(grant_m & ~sel_remote),
            self.remote.ready.eq(grant_m & sel_remote),
        ]
        with m.If(grant_c):
            m.d.sync += last_store.eq(sel_store)
        with m.If(grant_m):
            m.d.sync += last_remote.eq(sel_remote)
        with m.If(grant_c | grant_m):
            m.d.sync += last_comm.eq(grant_m)
        # The limit in effect next cycle (a configuration written now applies from then on;
        # an accepted one has a limit of at least 1, so a reset ``wait`` is never full).
        new_cfg = self.config.payload
        limit_next = Mux(self.config.valid & config_ok(new_cfg), new_cfg.starvation_limit,
                         cfg.starvation_limit)
        with m.If(~mp | grant_m):
            m.d.sync += [wait.eq(0), wait_full.eq(0)]
        with m.Elif(slot & ~wait_full):
            m.d.sync += [wait.eq(wait + 1), wait_full.eq(wait + 1 >= limit_next)]
        with m.Else():
            m.d.sync += wait_full.eq(wait >= limit_next)

        # --- the output register ----------------------------------------------------------
        req = Signal(mem_request_layout(p))
        tracked = Signal()
        ld, st, dm, rm = (self.load.payload, self.store.payload, self.dma.payload,
                          self.remote.payload)
        with m.If(grant_c & ~sel_store):
            m.d.comb += [req.op.eq(MemOp.READ), req.source.eq(WriteSource.COMPUTE),
                         req.addr.eq(ld.addr), req.bytes.eq(ld.bytes), req.tag.eq(ld.tag)]
        with m.Elif(grant_c):
            m.d.comb += [req.op.eq(Mux(st.kind == WriteKind.UPDATE, MemOp.UPDATE, MemOp.STORE)),
                         req.source.eq(WriteSource.COMPUTE), req.addr.eq(st.addr),
                         req.bytes.eq(st.bytes), req.tile.eq(st.tile), tracked.eq(st.tracked)]
        with m.Elif(~sel_remote):
            m.d.comb += [req.op.eq(MemOp.READ), req.source.eq(WriteSource.DMA),
                         req.addr.eq(dm.addr), req.bytes.eq(dm.bytes), req.tag.eq(dm.tag)]
        with m.Else():
            m.d.comb += [req.op.eq(Mux(rm.kind == WriteKind.UPDATE, MemOp.UPDATE, MemOp.STORE)),
                         req.source.eq(WriteSource.REMOTE), req.addr.eq(rm.addr),
                         req.bytes.eq(rm.bytes), req.tile.eq(rm.tile), tracked.eq(rm.tracked)]
        out_tracked = Signal()
        with m.If(slot):
            m.d.sync += [self.dram.valid.eq(grant_c | grant_m), out_tracked.eq(tracked)]
            with m.If(grant_c | grant_m):
                m.d.sync += self.dram.payload.eq(req)

        # --- the tracker sees each tracked write the DRAM takes, one cycle later ------------
        out = self.dram.payload
        m.d.sync += [
            self.track.valid.eq(self.dram.valid & self.dram.ready & out_tracked
                                & (out.op != MemOp.READ)),
            self.track.payload.tile.eq(out.tile),
            self.track.payload.beats.eq(1),
            self.track.payload.kind.eq(Mux(out.op == MemOp.UPDATE, WriteKind.UPDATE,
                                           WriteKind.STORE)),
            self.track.payload.source.eq(out.source),
        ]

        # --- responses ----------------------------------------------------------------------
        rs = self.response.payload
        to_load = rs.source == WriteSource.COMPUTE
        to_dma  = rs.source == WriteSource.DMA
        m.d.comb += [
            self.load_response.valid.eq(self.response.valid & to_load),
            self.load_response.payload.tag.eq(rs.tag),
            self.dma_response.valid.eq(self.response.valid & to_dma),
            self.dma_response.payload.tag.eq(rs.tag),
            self.response.ready.eq(Mux(to_load, self.load_response.ready,
                                       Mux(to_dma, self.dma_response.ready, 1))),
            set_err.bad_response.eq(self.response.valid & ~to_load & ~to_dma),
        ]

        # --- configuration and threshold derivation ------------------------------------------
        new = self.config.payload
        ok = config_ok(new)
        m.d.comb += set_err.bad_config.eq(self.config.valid & ~ok)

        last_cycle = count == (C(1, 1) << cfg.window_log2) - 1
        # ceil(saturation * (W + C) / (2 W)) = ((saturation + 2) W - 1 + saturation C) >> (wl + 1),
        # with acc = saturation * C - 1, over three registered steps: a shift, an add, a shift.
        num = Signal(p.occupancy_width + cw + 2, reset_less=True)
        with m.If(self.config.valid & ok):
            m.d.sync += [cfg.eq(new), thr.eq(new.threshold), armed.eq(new.threshold == 0),
                         window.eq(0), finish.eq(0)]
        with m.Elif(armed & grant_c):
            m.d.sync += [armed.eq(0), count.eq(0), acc.eq(cfg.saturation - 1)]
            with m.If(cfg.window_log2 == 0):
                m.d.sync += finish.eq(1)
            with m.Else():
                m.d.sync += [window.eq(1), count.eq(1)]
        with m.Elif(window):
            m.d.sync += count.eq(count + 1)
            with m.If(grant_c):
                m.d.sync += acc.eq(acc + cfg.saturation)
            with m.If(last_cycle):
                m.d.sync += [window.eq(0), finish.eq(1)]
        with m.Elif(finish[0]):
            m.d.sync += [finish.eq(finish << 1), num.eq((cfg.saturation + 2) << cfg.window_log2)]
        with m.Elif(finish[1]):
            m.d.sync += [finish.eq(finish << 1), num.eq(num + acc)]
        with m.Elif(finish[2]):
            m.d.sync += [finish.eq(0), thr.eq(num >> (cfg.window_log2 + 1))]

        m.d.comb += [
            self.status.policy.eq(cfg.policy),
            self.status.threshold.eq(thr),
            self.status.measuring.eq(measuring),
        ]

        # --- counters and errors ------------------------------------------------------------
        s = self.stats
        for name, port in (("load", self.load), ("store", self.store), ("dma", self.dma),
                           ("remote", self.remote)):
            grants, stalls = s[f"grants_{name}"], s[f"stalls_{name}"]
            with m.If(port.valid & port.ready):
                m.d.sync += grants.eq(grants + 1)
            with m.If(port.valid & ~port.ready):
                m.d.sync += stalls.eq(stalls + 1)
        with m.If(slot & forced):
            m.d.sync += s.starved.eq(s.starved + 1)
        m.d.sync += self.errors.eq((self.errors.as_value() & ~self.clear.as_value())
                                   | set_err.as_value())
        return m


# --- formal properties (docs/formal.md); never part of the generated Verilog ---------------

def formal_spec(params: EngineParams, *, bug=None):
    """The formal spec top of an :class:`Arbiter` with ``params`` (small ones: see
    :data:`t3hw.formal.ARBITER_PARAMS`). It looks at the ports only.

    Every input is free in every cycle. Assumed: the request streams and ``response`` obey
    the stream rules, and every configuration write carries the parameter's
    ``starvation_limit`` (its policy, threshold, saturation and window are free, so the
    policy may change at any cycle and bad configurations are tried). Asserted, in every
    cycle:

    * **grants**: at most one of ``load``, ``store``, ``dma``, ``remote`` is ready (one-hot
      or zero); an input is ready only when it requests, and only in an issue slot
      (``~dram.valid | dram.ready``); a granted request is on ``dram`` the next cycle with its
      source and address, and ``dram`` holds a request only if one was granted or it stalled;
    * **starvation bounds** (this module's docstring): while the configuration is not being
      written and no threshold is being derived, the communication class waits at most
      ``L`` issue slots with a request pending and no communication grant, and each of
      ``dma`` and ``remote`` at most ``2 L + 1``; ``L`` is 1 under ``ROUND_ROBIN`` and
      ``starvation_limit`` under ``T3_MCA`` (``COMPUTE_FIRST`` has no bound);
    * ``dram``, ``load_response`` and ``dma_response`` obey the stream rules.

    Covers: under T3-MCA a communication request is forced through after exactly ``L``
    slots, and ``dma`` is granted after exactly ``2 L + 1``; the bounds are reached.

    ``bug="tight_bound"`` asserts the T3-MCA class bound one slot tighter than documented
    (``starvation_limit - 1``): a mutated property that the proof must catch, with a trace in
    which a request is forced through after exactly ``starvation_limit`` slots.
    """
    from .formal import Spec, drive_inputs, past, stream_rules
    p = check_params(params)
    if bug not in (None, "tight_bound"):
        raise ValueError(f"bug must be None or 'tight_bound', not {bug!r}")
    tight = 1 if bug == "tight_bound" else 0

    def body(m, platform):
        m.submodules.dut = dut = Arbiter(p)
        drive_inputs(m, dut)
        for name in ("load", "store", "dma", "remote", "response"):
            stream_rules(m, getattr(dut, name), Assume, name)
        for name in ("dram", "load_response", "dma_response"):
            stream_rules(m, getattr(dut, name), Assert, name)
        with m.If(dut.config.valid):
            m.d.comb += Assume(dut.config.payload.starvation_limit == p.starvation_limit)

        # --- grants -------------------------------------------------------------------------
        inputs = {"load":   (dut.load,   WriteSource.COMPUTE),
                  "store":  (dut.store,  WriteSource.COMPUTE),
                  "dma":    (dut.dma,    WriteSource.DMA),
                  "remote": (dut.remote, WriteSource.REMOTE)}
        slot = ~dut.dram.valid | dut.dram.ready
        readies = Cat(port.ready for port, _ in inputs.values())
        m.d.comb += [
            Assert((readies & (readies - 1)) == 0, "arbiter: more than one grant"),
            Assert(dut.dram.valid == past(m, readies.any() | (dut.dram.valid & ~dut.dram.ready),
                                          name="dram_next"),
                   "arbiter: dram request without a grant"),
        ]
        for name, (port, source) in inputs.items():
            m.d.comb += Assert(~port.ready | (port.valid & slot),
                               f"arbiter: {name} granted without a request or a slot")
            with m.If(past(m, port.ready, name=f"{name}_granted")):
                m.d.comb += [
                    Assert(dut.dram.payload.source == source,
                           f"arbiter: {name} grant not on dram"),
                    Assert(dut.dram.payload.addr == past(m, port.payload.addr,
                                                         name=f"{name}_addr"),
                           f"arbiter: {name} grant with another address"),
                ]

        # --- starvation bounds ---------------------------------------------------------------
        policy = dut.status.policy
        rr = policy == ArbPolicy.ROUND_ROBIN
        bound = Mux(rr, 1, p.starvation_limit)                      # L
        steady = ~dut.config.valid & ~dut.status.measuring & (rr | (policy == ArbPolicy.T3_MCA))
        comm_granted = dut.dma.ready | dut.remote.ready
        waits = {}
        for key, pending, granted, limit in (
                ("comm", dut.dma.valid | dut.remote.valid, comm_granted,
                 Mux(rr, 1, p.starvation_limit - tight)),
                ("dma", dut.dma.valid, dut.dma.ready, 2 * bound + 1),
                ("remote", dut.remote.valid, dut.remote.ready, 2 * bound + 1)):
            wait = waits[key] = Signal(range(2 * p.starvation_limit + 3), name=f"{key}_wait")
            with m.If(~pending | granted | ~steady):
                m.d.sync += wait.eq(0)
            with m.Elif(slot):
                m.d.sync += wait.eq(wait + 1)
                m.d.comb += Assert(wait + 1 <= limit,
                                   f"arbiter: {key} waited more than its bound")
        mca = steady & (policy == ArbPolicy.T3_MCA)
        m.d.comb += [
            Cover(mca & (waits["comm"] == p.starvation_limit) & comm_granted),
            Cover(mca & (waits["dma"] == 2 * p.starvation_limit + 1) & dut.dma.ready),
            Cover(dut.track.valid),
        ]
    return Spec(body)
