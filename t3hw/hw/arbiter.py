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
     (*forced*; counted in ``starved``), from reset on, while the threshold is being
     derived too;
  2. else compute, if it requests;
  3. else communication, if it requests and the DRAM ``occupancy`` of the cycle before,
     plus one (a request issued since), was below the ``threshold`` of that cycle (a
     registered compare: *Timing*); while the threshold is being derived,
     ``status.measuring``: whatever the occupancy;
  4. else nothing.

  ``wait`` counts the issue slots in which communication requested and was not granted (a
  request held back by ``track_hold`` included); it is cleared by a communication grant and
  in any cycle without a communication request, and saturates at ``starvation_limit``. So
  while the threshold is being derived T3-MCA is compute-first plus the starvation bound.
* ``T3_MCA_RR`` (ours: T3-MCA with round robin below the threshold): T3-MCA, with one more
  rule between 1 and 2: if communication requests, the threshold is in effect (not being
  derived), the last grant went to compute, and the DRAM ``occupancy`` of two cycles
  before, plus two (the requests issued since), was below the ``threshold`` of that cycle
  (a compare registered twice: *Timing*), communication is granted (whether or not
  compute requests: the queue is below the threshold either way). So while the DRAM's
  queue is below the threshold (it has room) the classes alternate as under
  ``ROUND_ROBIN``, and at or above it compute goes first as under T3-MCA. T3-MCA leaves communication only the slots compute does not use, even when
  the queue is short; when the GEMM issues in nearly every slot but the DRAM keeps up,
  communication then waits for the starvation limit although the DRAM has room for it.

Starvation bounds
-----------------
In issue slots in which a communication request is pending, ``ROUND_ROBIN`` grants
communication within 2 slots and ``T3_MCA`` and ``T3_MCA_RR`` within ``starvation_limit +
1``, at all times (from reset, and while the threshold is being derived); ``COMPUTE_FIRST``
has no bound. So the class goes at most ``L`` slots in a row without a grant, ``L`` = 1
(round robin) or ``starvation_limit`` (T3-MCA, T3_MCA_RR). Inside a class the two inputs
alternate, so one input of a class waits at most ``2 L + 1`` slots. No input is ever granted without a request.
``track_hold`` (below) adds to these: each issue slot in which it held back every pending
communication request adds at most one slot to the class's wait (``L + h`` for ``h`` such
slots), and each one in which it held back an input's own request at most one turn of its
class, ``L + 1`` slots, to that input's (``2 L + 1 + (L + 1) h``). A slot with
``track_hold`` high in which the held input would not have been granted anyway costs
nothing (under T3-MCA the held slot counts in ``wait``).

Holding tracked writes (``track_hold``)
---------------------------------------
The tracker (fed by ``track``) takes programming and internal requests only in cycles
without a write; under continuous tracked writes it would starve. In an issue slot with
``track_hold`` high, the decision treats a tracked write (a ``store`` or ``remote`` request
with ``tracked`` set) as not requesting: the policy chooses among the other requests as it
always does (a load, a DMA read, an untracked write), or grants nothing if only tracked
writes wait. The held request stays on its input. The pipeline (decided in cycle t, on
``dram`` from t + 1 until the DRAM takes it, on ``track`` the cycle after it is taken) gives:

    if ``track_hold`` is high in cycle t, ``track.valid`` is low in cycle t + 1 or t + 2

(``k = 2``): ``track`` in t + 1 is a tracked write the DRAM took in t, which makes t an issue
slot, and the request the DRAM can take in t + 1 is the one granted in t, not a tracked
write. So one cycle of ``track_hold`` frees one of the next two cycles, and a
``track_hold`` kept high frees at least every other cycle. A cycle with ``track_hold`` high
that is no issue slot decides nothing and costs nothing.

Threshold derivation (T3-MCA with ``threshold = 0``)
----------------------------------------------------
The threshold is derived from the compute request rate in a window of ``2**window_log2``
cycles from the first compute grant after reset or after a configuration with
``threshold = 0``, as ``ceil(saturation * (1 + rate) / 2)``; ``status.measuring`` is
high until it is in effect. :mod:`t3hw.hw.arbiter_mca` has the rule, its hardware and its
timing.

Configuration
-------------
``config`` (from the register block) replaces the whole configuration, or is rejected with
the ``bad_config`` event when its ``starvation_limit`` is 0,
``window_log2`` is above 24, or ``threshold`` and ``saturation`` are both 0. It is checked in
the cycle it is written (``bad_config`` is set the cycle after) and an accepted one is
registered and takes effect the cycle after that: written in cycle t, it governs the
decisions from cycle t + 2 (``status`` shows it from then). An accepted one with
``threshold = 0`` restarts the derivation.

Timing
------
The decision is one level of logic over the requests (each write input's ``valid`` gated by
``track_hold`` and its ``tracked`` bit), ``dram.ready`` and registers: the occupancy compare
(``occupancy + 1 < threshold``, one carry chain) is registered (``below``: the gate sees
the occupancy one cycle late, and counts the request it may have issued since), and
``measuring``, the policy, the round-robin turn (T3_MCA_RR) and the starvation state enter
it as registers with their own next-state logic. Nothing but the readies and a few one-bit
registers hang off the grant: each input's payload register is loaded in every issue slot
(``dram.payload`` is their AND-OR by one-hot registers of the input granted), the counters
count a cycle later, and the derivation counts registered grants.

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

from types import SimpleNamespace

from amaranth import *
from amaranth.hdl import Assume, Cover
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from t3hw.spec.layouts import (MCA_POLICIES, ArbPolicy, MemOp, WriteKind, WriteSource,
                      arbiter_config_layout, arbiter_errors_layout, arbiter_stats_layout,
                      arbiter_status_layout, load_layout, load_response_layout, mem_request_layout,
                      mem_response_layout, mem_store_layout,
                      read_request_layout, read_response_layout, write_layout)
from t3hw.spec.contract import arbiter_reset_config as reset_config
from t3hw.spec.params import EngineParams, check_params
from .arbiter_mca import config_ok, derivation, derivation_state
from .formal import Spec, drive_inputs, past, stream_rules
from .logic import one_hot_select
from .status import count, sticky_errors


__all__ = ["Arbiter", "formal_spec"]

def _is_mca(policy):
    """Whether ``policy`` is one of :data:`MCA_POLICIES` (codes 2 and 3: the high bit)."""
    return Value.cast(policy)[1]


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
    track_hold : In(1)
        Grant no tracked write in this cycle's issue slot (from the tracker; see *Holding
        tracked writes*).
    response : In(stream.Signature(mem_response_layout))
        Read returns from the DRAM.
    load_response : Out(stream.Signature(load_response_layout))
        Returns of ``load`` requests.
    dma_response : Out(stream.Signature(read_response_layout))
        Returns of ``dma`` requests (to the DMA's ``response``), with their ``error`` bit.
    track : Out(stream.Signature(write_layout, always_ready=True))
        Tracked writes the DRAM took, one cycle later (to the tracker's ``write``).
    config : In(stream.Signature(arbiter_config_layout, always_ready=True))
        A new configuration (from the register block); in effect two cycles after it is
        written.
    status : Out(arbiter_status_layout)
        Policy and threshold in effect; whether the threshold is being derived.
    errors : Out(arbiter_errors_layout)
        Sticky error bits (set the cycle after the event).
    clear : In(arbiter_errors_layout)
        Clears the error bits that are 1.
    stats : Out(arbiter_stats_layout)
        Wrapping counters; a cycle's grants and stalls are counted in the cycle after, so
        they show on the port two cycles after they happen.
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
            "track_hold":    In(1),
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
        # One helper per concern, called in the order their statements enter the module:
        # the derivation's registers (declared first: the decision reads them), the decision,
        # the next state of the registers it reads, the output register and the tracked
        # writes, the responses, the configuration and the derivation, the counters, errors.
        p = self._p
        m = Module()
        rst_cfg = reset_config(p)
        cfg = Signal(arbiter_config_layout(p), init=rst_cfg)
        set_err = Signal(arbiter_errors_layout(p))
        dv = derivation_state(p, rst_cfg)
        d = self._decision(m, cfg, rst_cfg, dv)
        self._policy_state(m, cfg, dv, d)
        self._output(m, d)
        self._responses(m, set_err)
        derivation(m, p, self, cfg, rst_cfg, dv, d, set_err)
        self._counters(m, d)
        sticky_errors(m, self.errors, self.clear, set_err)
        return m

    def _decision(self, m, cfg, rst_cfg, dv):
        """The class decision and, inside each class, the input; the readies."""
        p = self._p
        # A configuration is checked in the cycle it is written (``bad_config``); an accepted
        # one is registered with its verdict (``new``, ``accept``) and applied the cycle
        # after, so that the 40-input check drives no enable.
        new = Signal(arbiter_config_layout(p), reset_less=True)
        accept = Signal()
        m.d.sync += [new.eq(self.config.payload),
                     accept.eq(self.config.valid & config_ok(self.config.payload))]
        slot = ~self.dram.valid | self.dram.ready
        # ``track_hold`` makes a tracked write ineligible for this slot: the decision sees
        # only the eligible requests (``store_ok``, ``remote_ok``, ``cp``, ``mp_ok``), while
        # ``wait`` counts the slots in which communication requested at all (``mp``), so
        # that a held write keeps its place in the starvation count.
        store_ok, remote_ok = Signal(), Signal()
        m.d.comb += [store_ok.eq(self.store.valid & ~(self.track_hold
                                                      & self.store.payload.tracked)),
                     remote_ok.eq(self.remote.valid & ~(self.track_hold
                                                        & self.remote.payload.tracked))]
        cp = self.load.valid | store_ok
        mp = self.dma.valid | self.remote.valid
        mp_ok = self.dma.valid | remote_ok
        # ``wait1`` holds ``wait + 1`` (``wait`` itself is not kept), so that every compare
        # below is one carry chain; ``wait_full`` is ``wait >= cfg.starvation_limit``, kept
        # as a register beside it (updated with it, in :meth:`_policy_state`), so that no
        # compare lies before the decision.
        wait1, wait_full = Signal(p.starvation_width + 1, init=1), Signal()
        last_comm = Signal()                               # the last grant went to comm
        # The policy enters the decision through two registers with their next-state logic
        # (:meth:`_policy_state`), so that the decision sees the requests and flip-flops
        # only: ``gated``, T3-MCA or T3_MCA_RR outside the derivation (communication goes
        # below the threshold after compute); ``comm_first``, communication goes first if it
        # requests: round robin after a compute grant; T3-MCA or T3_MCA_RR with ``wait_full``
        # (forced); T3_MCA_RR outside the derivation after a compute grant with ``below2``
        # (its turn, the gate open). Both 0 under compute-first; ``gated`` 0 while deriving;
        # ``below``: the occupancy compare of the cycle before, registered (its carry chain
        # was the engine's worst path), counting one request more than the occupancy it
        # sees (the one it may have issued since), so a gated grant never finds the queue at
        # the threshold (docs/arbiter.md, "Timing"); ``below2``, for T3_MCA_RR's turn (into
        # ``comm_first`` at the clock edge), is a cycle older still, with two requests more.
        below, below2 = Signal(init=1), Signal(init=1)     # the occupancy of reset, 0
        m.d.sync += [below.eq(self.occupancy + 1 < dv.thr), below2.eq(self.occupancy + 2 < dv.thr)]
        rst_policy = ArbPolicy(rst_cfg["policy"])
        gated = Signal(init=rst_policy in MCA_POLICIES and not dv.derive)
        comm_first = Signal(init=rst_policy == ArbPolicy.ROUND_ROBIN
                             or (rst_policy == ArbPolicy.T3_MCA_RR and not dv.derive))
        pick_c = Signal()           # (no ``keep`` on the decision's wires: mapped as a whole)
        m.d.comb += pick_c.eq(cp & ~(mp_ok & comm_first))
        forced = mp_ok & wait_full & _is_mca(cfg.policy)                 # counted only
        grant_c = slot & pick_c
        # In a slot, comm wins (``m_wins``) with ``go_m | (gate_m & below)``: it goes first, or
        # after no compute request without (``go_m``) or with (``gate_m``) the threshold. None
        # of these sees ``slot`` (``dram.ready``): it enters each enable last.
        go_m, gate_m = Signal(), Signal()
        m.d.comb += [go_m.eq(mp_ok & (comm_first | (~cp & ~gated))),
                     gate_m.eq(mp_ok & ~cp & gated)]
        m_wins = go_m | (gate_m & below)
        grant_m = slot & m_wins

        # --- inside each class: alternate when both inputs request --------------------------
        last_store  = Signal()                             # compute: the store went last
        last_remote = Signal()                             # comm: the remote went last
        sel_store, sel_remote = Signal(), Signal()
        m.d.comb += [sel_store.eq(store_ok & (~self.load.valid | ~last_store)),
                     sel_remote.eq(remote_ok & (~self.dma.valid | ~last_remote))]
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
        return SimpleNamespace(
            new=new, accept=accept, slot=slot, mp=mp, wait1=wait1, wait_full=wait_full,
            last_comm=last_comm, gated=gated, comm_first=comm_first, pick_c=pick_c,
            forced=forced, grant_c=grant_c, m_wins=m_wins, below=below, below2=below2,
            grant_m=grant_m, sel_store=sel_store, sel_remote=sel_remote)

    def _policy_state(self, m, cfg, dv, d):
        """The next state of the registers the decision reads: ``wait1``, ``wait_full``,
        ``gated``, ``last_comm`` and ``comm_first``."""
        new, accept, mp, m_wins, slot = d.new, d.accept, d.mp, d.m_wins, d.slot
        wait1, wait_full, gated = d.wait1, d.wait_full, d.gated
        # Next values for an issue slot and for a cycle that is none, selected by ``slot``
        # (``in_slot``), so that it is the last gate before the registers.
        in_slot = lambda if_slot, if_not: Mux(slot, if_slot, if_not)
        # ``wait_full`` next cycle is ``wait >= limit`` with the wait and the limit of the next
        # cycle. Under the limit in effect, a wait that grows is below it, so it becomes full
        # exactly when ``wait + 1`` reaches it, and one that holds keeps its flag. Under a
        # configuration applied now (its limit at least 1, so a reset ``wait`` is never
        # full), both are compared with the new limit. In a slot, ``wait`` grows unless full.
        full_keep = Mux(wait_full, wait_full, wait1 == cfg.starvation_limit)
        full_new = Mux(wait_full, wait1 > new.starvation_limit,
                       wait1 >= new.starvation_limit)
        # ``wait`` restarts without a comm request and when comm wins a slot; grows until full.
        with m.If(~mp | slot):
            m.d.sync += wait1.eq(Mux(mp & ~m_wins, Mux(wait_full, wait1, wait1 + 1), 1))
        # ``gated`` changes with the configuration and when a derivation ends.
        gated_next = Mux(accept, _is_mca(new.policy) & (new.threshold != 0),
                         Mux(dv.finish[1], _is_mca(cfg.policy), gated))
        m.d.sync += gated.eq(gated_next)
        policy_next = Mux(accept, new.policy, cfg.policy)
        # ``wait_full`` unless communication goes, in a slot and in a cycle that is none. These
        # and the ``if_*`` below are kept (``keep``): functions of registers alone, mapped apart
        # from the decision, which meets them in the last level, not at the first of a wide mux.
        full_slot, full_none = Signal(attrs={"keep": 1}), Signal(attrs={"keep": 1})
        m.d.comb += [full_slot.eq(mp & Mux(accept, full_new, full_keep)),
                     full_none.eq(mp & Mux(accept, wait1 > new.starvation_limit, wait_full))]
        # ``comm_first`` next per outcome of the grant (comm, compute, none), selected by it.
        def comm_first_if(last_comm, wait_full_n):
            return (((policy_next == ArbPolicy.ROUND_ROBIN) & ~last_comm)
                    | (_is_mca(policy_next) & wait_full_n)
                    | ((policy_next == ArbPolicy.T3_MCA_RR) & gated_next & ~last_comm
                       & d.below2))
        if_m, if_c, if_none, if_no_slot = (Signal(attrs={"keep": 1}) for _ in range(4))
        m.d.comb += [if_m.eq(comm_first_if(1, 0)),
                     if_c.eq(comm_first_if(0, full_slot)),
                     if_none.eq(comm_first_if(d.last_comm, full_slot)),
                     if_no_slot.eq(comm_first_if(d.last_comm, full_none))]
        m.d.sync += [
            d.last_comm.eq(in_slot(Mux(d.pick_c | m_wins, m_wins, d.last_comm), d.last_comm)),
            wait_full.eq(in_slot(~m_wins & full_slot, full_none)),
            d.comm_first.eq(in_slot(Mux(m_wins, if_m, Mux(d.pick_c, if_c, if_none)),
                                    if_no_slot)),
        ]

    def _output(self, m, d):
        """The output register (the payload loaded in every issue slot, ``dram.valid`` set by
        a grant), and ``track``, the tracked writes it delivers."""
        p = self._p
        # Each input's request, as the DRAM would see it, with its ``tracked`` bit on top.
        ld, st, dm, rm = (self.load.payload, self.store.payload, self.dma.payload,
                          self.remote.payload)
        reqs = {name: Signal(mem_request_layout(p), name=f"{name}_req")
                for name in ("load", "store", "dma", "remote")}
        for name, port, source in (("store", st, WriteSource.COMPUTE),
                                   ("remote", rm, WriteSource.REMOTE)):
            r = reqs[name]
            m.d.comb += [r.op.eq(Mux(port.kind == WriteKind.UPDATE, MemOp.UPDATE, MemOp.STORE)),
                         r.source.eq(source), r.addr.eq(port.addr), r.bytes.eq(port.bytes),
                         r.tile.eq(port.tile)]
        for name, port, source in (("load", ld, WriteSource.COMPUTE),
                                   ("dma", dm, WriteSource.DMA)):
            r = reqs[name]
            m.d.comb += [r.op.eq(MemOp.READ), r.source.eq(source), r.addr.eq(port.addr),
                         r.bytes.eq(port.bytes), r.tag.eq(port.tag)]
        full = {name: Cat(r.as_value(), {"store": st.tracked, "remote": rm.tracked}.get(name, 0))
                for name, r in reqs.items()}
        # The payload is loaded in every issue slot, not by the grant (without one
        # ``dram.valid`` is 0): each input has a register loaded with its request, and a
        # one-hot register per input (``is_<input>``) keeps which one the class picked
        # (``pick_c``) and the input in each class (``sel_store``, ``sel_remote``) name;
        # ``dram.payload`` is the AND-OR of the four by those flip-flops, with no decode
        # between. So no decision lies between an input's payload and its register.
        width = len(full["load"])
        q = {name: Signal(width, name=f"{name}_q") for name in full}
        chosen = {"load": d.pick_c & ~d.sel_store, "store": d.pick_c & d.sel_store,
                  "dma": ~d.pick_c & ~d.sel_remote, "remote": ~d.pick_c & d.sel_remote}
        is_ = {name: Signal(name=f"is_{name}") for name in full}
        with m.If(d.slot):
            m.d.sync += [self.dram.valid.eq(d.grant_c | d.grant_m),
                         *(is_[name].eq(value) for name, value in chosen.items()),
                         *(q[name].eq(value) for name, value in full.items())]
        out_tracked = Signal()
        m.d.comb += Cat(self.dram.payload.as_value(), out_tracked).eq(
            one_hot_select([is_[name] for name in full], [q[name] for name in full]))
        # The tracker sees each tracked write the DRAM takes, one cycle later.
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

    def _responses(self, m, set_err):
        """Each read return to ``load_response`` or ``dma_response`` by its source; one with
        any other source is dropped with the ``bad_response`` event."""
        rs = self.response.payload
        to_load = rs.source == WriteSource.COMPUTE
        to_dma  = rs.source == WriteSource.DMA
        m.d.comb += [
            self.load_response.valid.eq(self.response.valid & to_load),
            self.load_response.payload.tag.eq(rs.tag),
            self.dma_response.valid.eq(self.response.valid & to_dma),
            self.dma_response.payload.tag.eq(rs.tag),
            self.dma_response.payload.error.eq(rs.error),
            self.response.ready.eq(Mux(to_load, self.load_response.ready,
                                       Mux(to_dma, self.dma_response.ready, 1))),
            set_err.bad_response.eq(self.response.valid & ~to_load & ~to_dma),
        ]

    def _counters(self, m, d):
        """The statistics: grants and stalls of each input, forced communication grants."""
        # Each cycle's grants and stalls are registered and counted the cycle after, so that
        # the decision drives one flip-flop per event, not the enable of a counter.
        s = self.stats
        for name, port in (("load", self.load), ("store", self.store), ("dma", self.dma),
                           ("remote", self.remote)):
            grants, stalls = s[f"grants_{name}"], s[f"stalls_{name}"]
            granted, stalled = Signal(name=f"{name}_granted"), Signal(name=f"{name}_stalled")
            m.d.sync += [granted.eq(port.valid & port.ready), stalled.eq(port.valid & ~port.ready)]
            count(m, grants, granted)
            count(m, stalls, stalled)
        was_forced = Signal()
        m.d.sync += was_forced.eq(d.slot & d.forced)
        count(m, s.starved, was_forced)


# --- formal properties (docs/formal.md); never part of the generated Verilog ---------------

def formal_spec(params: EngineParams, *, bug=None):
    """The formal spec top of an :class:`Arbiter` with ``params`` (small ones: see
    :data:`t3hw.tools.formal.ARBITER_PARAMS`). It looks at the ports only.

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
      written nor was written in the cycle before (a configuration takes effect two cycles
      after it is written), whether a threshold is being derived or not (from reset on),
      the communication class waits at most ``L + h`` issue slots with a request pending
      and no communication grant, ``h`` the slots among them in which ``track_hold`` held
      back every pending communication request; ``dma`` at most ``2 L + 1``, and
      ``remote`` at most ``2 L + 1 + (L + 1) h``, ``h`` the slots in which its own request
      was held; ``L`` is 1 under ``ROUND_ROBIN`` and ``starvation_limit`` under ``T3_MCA``
      and ``T3_MCA_RR`` (``COMPUTE_FIRST`` has no bound);
    * **track_hold**: no tracked ``store`` or ``remote`` write is granted in a cycle with
      ``track_hold`` high, and ``track.valid`` is low in one of the two cycles after it;
    * ``dram``, ``load_response`` and ``dma_response`` obey the stream rules.

    Covers: under T3-MCA a communication request is forced through after exactly ``L``
    slots, also while the threshold is being derived, and after exactly ``L + 1`` with one
    held slot; ``dma`` is granted after exactly ``2 L + 1``; a held tracked store's slot
    goes to a load; ``track`` is high in the cycle after a ``track_hold``; under T3_MCA_RR
    communication takes its round-robin turn beside a compute request before it is forced.

    ``bug="tight_bound"`` asserts the T3-MCA class bound one slot tighter than documented
    (``starvation_limit - 1``): a mutated property that the proof must catch, with a trace in
    which a request is forced through after exactly ``starvation_limit`` slots.
    """
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

        # --- starvation bounds, with the slots track_hold costs -----------------------------
        policy = dut.status.policy
        rr = policy == ArbPolicy.ROUND_ROBIN
        bound = Mux(rr, 1, p.starvation_limit)                      # L
        # a configuration written in cycle t is in effect from t + 2
        written = dut.config.valid | past(m, dut.config.valid, name="config_written")
        steady = ~written & (rr | _is_mca(policy))                 # deriving or not
        comm_granted = dut.dma.ready | dut.remote.ready
        remote_held = dut.track_hold & dut.remote.valid & dut.remote.payload.tracked
        waits, holds = {}, {}
        for key, pending, granted, held in (
                ("comm", dut.dma.valid | dut.remote.valid, comm_granted,
                 remote_held & ~dut.dma.valid),
                ("dma", dut.dma.valid, dut.dma.ready, 0),
                ("remote", dut.remote.valid, dut.remote.ready, remote_held)):
            wait = waits[key] = Signal(range(64), name=f"{key}_wait")        # > the depth
            hold = holds[key] = Signal(range(64), name=f"{key}_holds")
            h = hold + held                          # the held slots, this one included
            limit = bound - tight + h if key == "comm" else 2 * bound + 1 + (bound + 1) * h
            with m.If(~pending | granted | ~steady):
                m.d.sync += [wait.eq(0), hold.eq(0)]
            with m.Elif(slot):
                m.d.sync += [wait.eq(wait + 1), hold.eq(h)]
                m.d.comb += Assert(wait + 1 <= limit,
                                   f"arbiter: {key} waited more than its bound")
        mca = steady & _is_mca(policy)

        # --- track_hold ---------------------------------------------------------------------
        # No tracked write is granted in a slot with track_hold high; so a cycle with
        # track_hold high is followed, in one of the next two cycles, by one without a write
        # on ``track``.
        for name in ("store", "remote"):
            port = getattr(dut, name)
            m.d.comb += Assert(~(port.ready & dut.track_hold & port.payload.tracked),
                               f"arbiter: tracked {name} granted with track_hold high")
        track_q = past(m, dut.track.valid, name="track_q")
        hold_q2 = past(m, past(m, dut.track_hold, name="hold_q1"), name="hold_q2")
        m.d.comb += Assert(~(hold_q2 & track_q & dut.track.valid),
                           "arbiter: track writes in both cycles after a track_hold")
        m.d.comb += [
            Cover(mca & (waits["comm"] == p.starvation_limit) & comm_granted),
            Cover(mca & dut.status.measuring & (waits["comm"] == p.starvation_limit)
                  & comm_granted),
            Cover(mca & (waits["comm"] == p.starvation_limit + 1) & (holds["comm"] == 1)
                  & comm_granted),
            Cover(mca & (waits["dma"] == 2 * p.starvation_limit + 1) & dut.dma.ready),
            Cover(dut.track.valid),
            Cover(dut.track_hold & dut.store.valid & dut.store.payload.tracked
                  & dut.load.ready),
            Cover(hold_q2 & track_q),
            Cover(steady & (policy == ArbPolicy.T3_MCA_RR) & ~dut.status.measuring
                  & dut.load.valid & comm_granted & (waits["comm"] < p.starvation_limit)),
        ]
    return Spec(body)
