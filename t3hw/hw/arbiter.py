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
the fourth cycle after the window (``FINISH_CYCLES``: the window's last grant is registered,
then an add, then the result is taken, one per cycle, so the computation is never a long
path) the threshold is::

    threshold = ceil(saturation * (W + C) / (2 * W))       (= ceil(q_sat * (1 + rate) / 2))

where ``saturation`` (q_sat) is the occupancy at which the DRAM saturates, its
bandwidth-delay product in requests, and ``rate = C / W`` the compute share of the issue
slots. By Little's law the GEMM alone keeps ``n_gemm = rate * q_sat`` requests in the DRAM,
so this is ``ceil((n_gemm + q_sat) / 2)``: communication may fill the queue halfway from the
GEMM's own level to saturation. The derivation runs whatever the policy, and T3-MCA is
compute-first until it ends (``status.measuring``). The hardware accumulates
``saturation << (24 - window_log2)`` per compute grant (no multiplier), so that the division
is a fixed shift; it counts the grants from a register one cycle behind the decision.

Configuration
-------------
``config`` (from the register block) replaces the whole configuration, or is rejected with
the ``bad_config`` event when its policy code is 3, ``starvation_limit`` is 0,
``window_log2`` is above 24, or ``threshold`` and ``saturation`` are both 0. It is checked in
the cycle it is written (``bad_config`` is set the cycle after) and an accepted one is
registered and takes effect the cycle after that: written in cycle t, it governs the
decisions from cycle t + 2 (``status`` shows it from then). An accepted one with
``threshold = 0`` restarts the derivation.

Timing
------
The decision is one level of logic over the requests, ``dram.ready``, the occupancy compare
(``occupancy < threshold``, one carry chain) and registers; ``measuring``, the policy and
the starvation state enter it as registers with their own next-state logic. Nothing but the
readies, the output register and a few one-bit registers hang off the grant: the payload is
loaded in every issue slot, the counters count a cycle later, and the derivation counts
registered grants.

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

from t3hw.spec.layouts import (ArbPolicy, MemOp, WriteKind, WriteSource, arbiter_config_layout,
                      arbiter_errors_layout, arbiter_stats_layout, arbiter_status_layout,
                      load_layout, load_response_layout, mem_request_layout,
                      mem_response_layout, mem_store_layout,
                      read_request_layout, read_response_layout, write_layout)
from t3hw.spec.contract import MAX_WINDOW_LOG2, arbiter_reset_config as reset_config
from t3hw.spec.params import EngineParams, check_params
from .formal import Spec, drive_inputs, past, stream_rules
from .status import count, sticky_errors


__all__ = ["Arbiter", "formal_spec"]


def config_ok(new):
    """Whether the arbiter accepts configuration ``new`` (a view of
    :func:`t3hw.spec.layouts.arbiter_config_layout`): a known policy, a starvation limit of at
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
        dv = self._derivation_state(rst_cfg)
        d = self._decision(m, rst_cfg, dv)
        self._policy_state(m, cfg, dv, d)
        self._output(m, d)
        self._responses(m, set_err)
        self._derivation(m, cfg, rst_cfg, dv, d, set_err)
        self._counters(m, d)
        sticky_errors(m, self.errors, self.clear, set_err)
        return m

    def _derivation_state(self, rst_cfg):
        """The threshold derivation's registers, declared (:meth:`_derivation` drives them)."""
        p = self._p
        # ``measuring``: the threshold is being derived; a register with its own next-state
        # logic, so that the class decision starts from flip-flops. ``armed``: waiting for
        # the first compute grant; ``window``: collecting the window's compute grants;
        # ``finish``: the add and the shift that compute the threshold (:meth:`_derivation`).
        # The derivation looks at ``grant_c_q``, the compute grant registered, never at the
        # decision itself, so that no derivation register hangs off the decision's path.
        derive = rst_cfg["threshold"] == 0
        measuring = Signal(init=derive)
        armed  = Signal(init=derive)
        window = Signal()
        finish = Signal(2)                                  # one-hot: [0] add, [1] shift
        thr    = Signal(p.occupancy_width, init=rst_cfg["threshold"])
        cw     = MAX_WINDOW_LOG2 + 1
        left   = Signal(signed(cw))                         # window cycles to go, minus 2
        acc    = Signal(p.occupancy_width + MAX_WINDOW_LOG2)   # the grants, scaled (below)
        num    = Signal(p.occupancy_width + MAX_WINDOW_LOG2 + 2, reset_less=True)
        grant_c_q = Signal()                                # a compute grant last cycle
        return SimpleNamespace(derive=derive, measuring=measuring, armed=armed, window=window,
                               finish=finish, thr=thr, cw=cw, left=left, acc=acc, num=num,
                               grant_c_q=grant_c_q)

    def _decision(self, m, rst_cfg, dv):
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
        cp = self.load.valid | self.store.valid
        mp = self.dma.valid | self.remote.valid
        # ``wait1`` holds ``wait + 1`` (``wait`` itself is not kept), so that every compare
        # below is one carry chain; ``wait_full`` is ``wait >= cfg.starvation_limit``, kept
        # as a register beside it (updated with it, in :meth:`_policy_state`), so that no
        # compare lies before the decision.
        wait1 = Signal(p.starvation_width + 1, init=1)
        wait_full = Signal()
        last_comm = Signal()                               # the last grant went to comm
        # The policy enters the decision through two registers, each with its next-state
        # logic (:meth:`_policy_state`), so that the decision is a function of the requests,
        # the occupancy compare and flip-flops only: ``gated``, T3-MCA outside the derivation
        # (communication goes when forced, else below the threshold after compute);
        # ``comm_first``, communication goes before compute if it requests (round robin
        # after a compute grant, or ``gated`` and ``wait_full``). Under compute-first, and
        # under T3-MCA while deriving, both are 0.
        rst_policy = ArbPolicy(rst_cfg["policy"])
        gated = Signal(init=rst_policy == ArbPolicy.T3_MCA and not dv.derive)
        comm_first = Signal(init=rst_policy == ArbPolicy.ROUND_ROBIN)
        # ``pick_c`` and the selects inside each class are kept as wires, so that synthesis
        # maps the payload multiplexer (:meth:`_output`) as one 4:1 multiplexer per bit
        # behind them.
        pick_c = Signal(attrs={"keep": 1})
        m.d.comb += pick_c.eq(cp & ~(mp & comm_first))
        forced = mp & gated & wait_full                    # T3-MCA: starving
        grant_c = slot & pick_c
        # The communication grant is ``go_m | (gate_m & (occupancy < thr))``: communication
        # goes first, or after no compute request without (``go_m``) or with (``gate_m``)
        # the threshold. Both are kept as wires, so that the occupancy compare, the latest
        # input of the decision (a carry chain from the ``occupancy`` port), enters the last
        # level of logic of every ready and every register the grant drives.
        go_m, gate_m = Signal(attrs={"keep": 1}), Signal(attrs={"keep": 1})
        m.d.comb += [go_m.eq(slot & mp & (comm_first | (~cp & ~gated))),
                     gate_m.eq(slot & mp & ~cp & gated)]
        below = self.occupancy < dv.thr
        grant_m = go_m | (gate_m & below)

        # --- inside each class: alternate when both inputs request --------------------------
        last_store  = Signal()                             # compute: the store went last
        last_remote = Signal()                             # comm: the remote went last
        sel_store  = Signal(attrs={"keep": 1})
        sel_remote = Signal(attrs={"keep": 1})
        m.d.comb += [sel_store.eq(self.store.valid & (~self.load.valid | ~last_store)),
                     sel_remote.eq(self.remote.valid & (~self.dma.valid | ~last_remote))]
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
            forced=forced, grant_c=grant_c, go_m=go_m, gate_m=gate_m, below=below,
            grant_m=grant_m, sel_store=sel_store, sel_remote=sel_remote)

    def _policy_state(self, m, cfg, dv, d):
        """The next state of the registers the decision reads: ``wait1``, ``wait_full``,
        ``gated``, ``last_comm`` and ``comm_first``."""
        new, accept, mp, go_m, gate_m, below = d.new, d.accept, d.mp, d.go_m, d.gate_m, d.below
        wait1, wait_full, gated = d.wait1, d.wait_full, d.gated
        # ``wait_full`` next cycle is ``wait >= limit`` with the wait and the limit of the next
        # cycle. Under the limit in effect, a wait that grows is below it, so it becomes full
        # exactly when ``wait + 1`` reaches it, and one that holds keeps its flag. Under a
        # configuration applied now (its limit at least 1, so a reset ``wait`` is never
        # full), both are compared with the new limit.
        grow = d.slot & ~wait_full
        full_keep = Mux(grow, wait1 == cfg.starvation_limit, wait_full)
        full_new = Mux(grow, wait1 >= new.starvation_limit, wait1 > new.starvation_limit)
        drop_wait = Signal(attrs={"keep": 1})              # ``wait`` restarts unless gated
        m.d.comb += drop_wait.eq(~mp | go_m)
        with m.If(drop_wait | (gate_m & below)):
            m.d.sync += wait1.eq(1)
        with m.Elif(grow):
            m.d.sync += wait1.eq(wait1 + 1)
        # ``gated`` changes with the configuration and when a derivation ends.
        gated_next = Mux(accept, (new.policy == ArbPolicy.T3_MCA) & (new.threshold != 0),
                         Mux(dv.finish[1], cfg.policy == ArbPolicy.T3_MCA, gated))
        m.d.sync += gated.eq(gated_next)
        policy_next = Mux(accept, new.policy, cfg.policy)

        def policy_state(grant_m):
            """``last_comm``, ``wait_full`` and ``comm_first`` next cycle, with the
            communication grant ``grant_m``."""
            last_comm_next = Mux(d.grant_c | grant_m, grant_m, d.last_comm)
            wait_full_next = mp & ~grant_m & Mux(accept, full_new, full_keep)
            return [last_comm_next, wait_full_next,
                    ((policy_next == ArbPolicy.ROUND_ROBIN) & ~last_comm_next)
                    | (gated_next & wait_full_next)]

        # Computed for both outcomes of the occupancy compare, kept, and selected by it.
        for reg, if_below, if_not in zip((d.last_comm, wait_full, d.comm_first),
                                         policy_state(go_m | gate_m), policy_state(go_m)):
            pair = Signal(2, name=f"{reg.name}_next", attrs={"keep": 1})
            m.d.comb += pair.eq(Cat(if_not, if_below))
            m.d.sync += reg.eq(pair.bit_select(below, 1))

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
        # The payload is loaded in every issue slot, one 4:1 multiplexer per bit selected by
        # the class the policy picks (``pick_c``) and the input inside each class, not by the
        # grant: without a grant ``dram.valid`` is 0 and the payload is not looked at, so the
        # grant drives no enable of the payload register.
        chosen = Mux(d.pick_c, Mux(d.sel_store, full["store"], full["load"]),
                     Mux(d.sel_remote, full["remote"], full["dma"]))
        req = Signal(mem_request_layout(p))
        tracked = Signal()
        m.d.comb += Cat(req.as_value(), tracked).eq(chosen)
        out_tracked = Signal()
        with m.If(d.slot):
            m.d.sync += [self.dram.valid.eq(d.grant_c | d.grant_m), out_tracked.eq(tracked),
                         self.dram.payload.eq(req)]
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

    def _derivation(self, m, cfg, rst_cfg, dv, d, set_err):
        """The configuration (checked, then applied) and the threshold derivation; ``status``."""
        p, new, accept, cw = self._p, d.new, d.accept, dv.cw
        measuring, armed, window, finish, thr, left, acc, num, grant_c_q = (
            dv.measuring, dv.armed, dv.window, dv.finish, dv.thr, dv.left, dv.acc, dv.num,
            dv.grant_c_q)
        m.d.comb += set_err.bad_config.eq(self.config.valid & ~config_ok(self.config.payload))
        # The derivation computes ceil(saturation * (W + C) / (2 W)) = X >> (window_log2 + 1)
        # with X = (saturation + 2) W - 1 + saturation C, on X scaled by 2**s, s = 24 -
        # window_log2, so that the division is a fixed shift by 25: ``acc`` adds ``sat_s`` =
        # saturation << s per compute grant (acc = saturation C 2**s), and ``base`` =
        # ((saturation + 2) << 24) - (1 << s) is the rest. In cycles from the first compute
        # grant F (W = 2**window_log2):
        #   F + 1          ``armed`` sees it (``grant_c_q``): acc <- sat_s, left <- W - 3;
        #   F + 2 .. F + W ``window``: the grants of cycles F + 1 .. F + W - 1 are added,
        #                  ``left`` counts down and its sign bit marks the last cycle;
        #   F + W + 1      ``finish[0]``: num <- base + acc;
        #   F + W + 2      ``finish[1]``: thr <- num >> 25; measuring ends.
        # W - 3 for W >= 4 is a thermometer (bits 2 .. window_log2 - 1) plus 1; for W = 2 it
        # is -1; W = 1 skips the window. ``sat_s`` and ``unit`` follow ``cfg`` one registered
        # step behind, ``base`` two: a configuration accepted in cycle t (in ``cfg`` from
        # t + 1) is in ``sat_s`` from t + 2 and in ``base`` from t + 3, while its first window
        # starts at F + 1 >= t + 2 and its earliest add is F + 2 >= t + 3.
        wl = cfg.window_log2
        left_init = Mux(wl == 1, -1, Cat(C(1, 1), C(0, 1), *(wl > i for i in range(2, cw))))
        rst_s = MAX_WINDOW_LOG2 - rst_cfg["window_log2"]
        sat_s = Signal(len(acc), init=rst_cfg["saturation"] << rst_s)
        unit  = Signal(cw, init=1 << rst_s)
        sat2  = Signal(p.occupancy_width + 1, init=rst_cfg["saturation"] + 2)
        base  = Signal(len(num), init=((rst_cfg["saturation"] + 2) << MAX_WINDOW_LOG2)
                                      - (1 << rst_s))
        scale = Signal(range(MAX_WINDOW_LOG2 + 1), init=rst_s)       # s, set with ``cfg``
        m.d.sync += [sat_s.eq(cfg.saturation << scale), unit.eq(1 << scale),
                     sat2.eq(cfg.saturation + 2),
                     base.eq((sat2 << MAX_WINDOW_LOG2) - unit)]
        m.d.sync += grant_c_q.eq(d.grant_c & ~accept)
        with m.If(accept):
            m.d.sync += [cfg.eq(new), thr.eq(new.threshold), measuring.eq(new.threshold == 0),
                         armed.eq(new.threshold == 0), window.eq(0), finish.eq(0),
                         scale.eq(MAX_WINDOW_LOG2 - new.window_log2)]
        with m.Elif(armed & grant_c_q):
            m.d.sync += [armed.eq(0), acc.eq(sat_s), left.eq(left_init)]
            with m.If(wl == 0):
                m.d.sync += finish.eq(1)
            with m.Else():
                m.d.sync += window.eq(1)
        with m.Elif(window):
            m.d.sync += left.eq(left - 1)
            with m.If(grant_c_q):
                m.d.sync += acc.eq(acc + sat_s)
            with m.If(left[-1]):
                m.d.sync += [window.eq(0), finish.eq(1)]
        with m.Elif(finish[0]):
            m.d.sync += [finish.eq(finish << 1), num.eq(base + acc)]
        with m.Elif(finish[1]):
            m.d.sync += [finish.eq(0), measuring.eq(0), thr.eq(num >> (MAX_WINDOW_LOG2 + 1))]
        m.d.comb += [self.status.policy.eq(cfg.policy), self.status.threshold.eq(thr),
                     self.status.measuring.eq(measuring)]

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
      after it is written) and no threshold is being derived, the communication class waits at most
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
        # a configuration written in cycle t is in effect from t + 2
        written = dut.config.valid | past(m, dut.config.valid, name="config_written")
        steady = ~written & ~dut.status.measuring & (rr | (policy == ArbPolicy.T3_MCA))
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
