# SPDX-License-Identifier: Apache-2.0
"""The address map: classifies every producer store by a region table.

This is T3's "producer output address space configuration". Each of ``regions`` regions is
``[base, base + size)`` with a mode:

* ``LOCAL``: the store goes to the local memory controller, untracked;
* ``TRACKED``: the store goes to the local memory controller with ``tracked`` set, so the
  tracker counts it;
* ``REMOTE``: the store leaves on the network as an *update* packet to ``device``, at the
  translated address ``remote_base + (addr - base)``, carrying its tile id.

A store that matches no region goes to local memory, untracked, and counts in ``unmapped``.
A store that starts in a region and ends past it (``addr + bytes > base + size``) is refused
(``store_crosses``): nothing is written or sent.

The same table checks what arrives from the network (``rx``). A packet is written to local
memory only when it is for this GPU (``device == device_id``) and lies wholly in a ``LOCAL``
or ``TRACKED`` region; it is written with ``tracked`` set when that region is ``TRACKED``.
So the receiving GPU, which arms its tracker, also decides which arrivals it counts; the
sender does not. Every other packet is refused with one error, the first that applies:
``rx_misrouted`` (another device), ``rx_remote`` (in a ``REMOTE`` region: this GPU's own
send window), ``rx_unmapped`` (in no region that receives), ``rx_crosses`` (it ends past
its region). This second lookup has its own read ports and pipeline, and never waits for
the store path.

How it scales. The table is kept sorted by base address, in memory, and looked up by a
pipelined binary search, so a lookup costs ``log2(regions) + 3`` comparators and two adders
(``addr + bytes``; the translation, once, after the hit) whatever the number of regions,
and the table costs memory bits, not flip-flops and comparators per region:

* the *records*: per sorted position, the region's base, end (``base + size``), mode,
  device, translation (``remote_base - base``) and index;
* the *pivots*: the bases again, split by level of the search tree (level ``s`` holds the
  positions whose lowest set bit is ``s``), so that each search stage reads one small
  memory;
* two copies of both (*banks*) and a count of valid positions per bank. Lookups read the
  *active* bank; a region write builds the new table in the other bank and, when accepted,
  makes it active in one cycle. A store or packet reads the bank that was active when it
  was accepted, all the way down its pipeline.

Programming checks a write against the table one region per cycle: a single pass over the
sorted positions of the active bank copies every other valid region into the other bank in
order, compares it with the written region (where it sorts, and whether they overlap:
three comparators in all), and the written region goes in at its rank at the end. The
write is rejected (the active bank unchanged) for size 0, an end past the top of the
address space or an unknown mode (``bad_region``), or an overlap with another valid region
(``overlap``); removing a region (``valid = 0``) is always accepted. The table therefore
never overlaps and never holds an empty region, so at most one region matches any address.
Software needs no rule beyond that: regions are any non-overlapping ranges, programmed in
any order at any index (the driver's API is the region write of the register block).
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from t3hw.spec.contract import (addrmap_latency, addrmap_program_cycles, addrmap_queue_depth,
                                addrmap_search_stages, addrmap_verdict_cycles)
from t3hw.spec.layouts import (LUTRAM_ATTR, RegionMode, WriteKind, addrmap_capture_layout,
                               addrmap_errors_layout, addrmap_stats_layout, mem_store_layout,
                               net_packet_layout, region_program_layout, store_layout)
from t3hw.spec.params import EngineParams, check_params
from .queue import Queue
from .status import count, sticky_errors


__all__ = ["AddrMap"]


class AddrMap(wiring.Component):
    """Sorted region table, binary-search store classifier and packet checker.

    Parameters
    ----------
    params : EngineParams
        Uses ``regions``, ``addr_width``, ``device_width``, ``tile_width``, ``burst_bytes``
        and ``counter_width``.

    Members
    -------
    store : In(stream.Signature(store_layout))
        Producer stores. Ready while fewer than ``Q`` stores are held
        (:func:`~t3hw.spec.contract.addrmap_queue_depth`: accepted, and neither taken from
        ``net``/``mem`` nor refused); ``ready`` is a compare of one register.
    program : In(stream.Signature(region_program_layout))
        Region writes (from the register block). ``valid = 0`` removes region ``index``. A
        write with ``valid = 1`` replaces region ``index`` unless it is rejected: size 0,
        ``base + size > 2**addr_width`` or an unknown mode sets ``bad_region``; overlapping
        another valid region sets ``overlap``. A rejected write leaves the table unchanged.
        A write taken in cycle t sets its error bit in t + V
        (:func:`~t3hw.spec.contract.addrmap_verdict_cycles`, ``regions + 5``) and applies
        to stores and packets accepted from t + V on. ``ready`` is low for
        :func:`~t3hw.spec.contract.addrmap_program_cycles` - 1 cycles after a write is
        taken (``regions + 2 log2(regions) + 3``), so writes are checked one at a time, in
        order.
    net : Out(stream.Signature(net_packet_layout))
        Stores to ``REMOTE`` regions, as ``UPDATE`` packets.
    mem : Out(stream.Signature(mem_store_layout))
        Every other store, with ``tracked`` set for ``TRACKED`` regions. ``net`` and ``mem``
        are the head of one queue of classified stores, in the order they were accepted: a
        stalled output holds the stores behind it.
    rx : In(stream.Signature(net_packet_layout))
        Packets from the network. Ready while fewer than ``Q`` packets are held (accepted,
        and neither taken from ``rx_mem`` nor refused).
    rx_mem : Out(stream.Signature(mem_store_layout))
        Each packet accepted, as a local store (its ``kind``, ``tile`` and ``bytes``),
        ``tracked`` when its region is ``TRACKED``, checked against the table and
        ``device_id`` as they stood when the packet was accepted.
    device_id : In(device_width)
        This GPU's device number (from the register block's ``DEVICE_ID``); packets for
        another device are refused.
    errors : Out(addrmap_errors_layout)
        Sticky error bits; each stays set until the same bit of ``clear`` is pulsed (a bit set
        in the same cycle as its clear stays set). A refused store or packet sets its bit in
        the cycle after it is classified (``L`` cycles after it was accepted); a rejected
        region write ``V`` cycles after it was taken.
    clear : In(addrmap_errors_layout)
        Write-one-to-clear strobe for ``errors``.
    stats : Out(addrmap_stats_layout)
        Wrapping counters: the stores by class, counted as they are classified, and each
        refusal under its error's name.
    capture : Out(addrmap_capture_layout)
        The details of the error events that ``errors`` shows set in this cycle, registered
        with them and held until the next event: a refused store's address, its region's
        device and its tile; a refused packet's address, device and tile; a rejected region
        write's base and device (tile 0). When events coincide, the store's win, then the
        packet's, then the region write's.

    Timing. A store accepted in cycle t is classified in t + L - 1 (its counter, or its
    refusal) and, unless refused, is valid at ``net`` or ``mem`` from t + L on
    (:func:`~t3hw.spec.contract.addrmap_latency`, ``2 log2(regions) + 4``), behind the
    stores accepted before it; one store per cycle while the outputs are ready. The stages,
    each ending in registers, with no enable (nothing stalls inside the pipeline; the
    credit count at the input and the output queue absorb back-pressure):

    * S0: the store and the active bank;
    * search, two stages per level ``s`` from the top: read the pivot of level ``s`` under
      the path so far (asynchronous memory read) and whether its position is below the
      bank's count; then compare it with the address (one carry chain) and take the branch;
    * record: read the record at the position found; add ``addr + bytes``;
    * F: three compares (``base <= addr``, ``addr < end``, ``addr + bytes <= end``) and the
      translation (``addr + delta``), in parallel;
    * C: the class from F's registers: the counters, the refusal, the push into the output
      queue (:class:`~t3hw.hw.queue.Queue`, ``Q`` items, asynchronous-read memory).

    Received packets take the same stages, their own read ports and their own queue into
    ``rx_mem``; S0 also registers ``device != device_id``.

    Programming: P1 registers the write with its end, translation and field checks; the
    pass reads the active bank's positions in order, one per cycle, into registers (stage
    1), compares each with the write (stage 2: three compares, each into a register) and
    copies it into the other bank (stage 3: at its position, one further when it sorts
    after the write; the pivot at the level of the position's lowest set bit; the write
    registered, landing the cycle after); one cycle registers the verdict and the written
    region's own write at its rank, the next writes it and decides: reject, or make the
    other bank active. ``program.ready`` is a register. Valid bits, counts, the active
    bank, the pipeline's and the pass's control, ``errors``, ``stats`` and ``capture`` are
    reset; the memories are not (a position is read only below its bank's count).
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "store":     In(stream.Signature(store_layout(params))),
            "program":   In(stream.Signature(region_program_layout(params))),
            "net":       Out(stream.Signature(net_packet_layout(params))),
            "mem":       Out(stream.Signature(mem_store_layout(params))),
            "rx":        In(stream.Signature(net_packet_layout(params))),
            "rx_mem":    Out(stream.Signature(mem_store_layout(params))),
            "device_id": In(params.device_width),
            "errors":    Out(addrmap_errors_layout(params)),
            "clear":     In(addrmap_errors_layout(params)),
            "stats":     Out(addrmap_stats_layout(params)),
            "capture":   Out(addrmap_capture_layout(params)),
        })

    @property
    def params(self):
        return self._p

    # --- layouts ----------------------------------------------------------------------------

    def _bounds_layout(self):
        """What every reader of a record needs: its range and mode."""
        p = self._p
        return data.StructLayout({"base": p.addr_width, "end": p.addr_width + 1,
                                  "mode": RegionMode})

    def _route_layout(self):
        """What the store path and the pass read besides: the translation and device."""
        p = self._p
        return data.StructLayout({"delta": p.addr_width, "device": p.device_width})

    def elaborate(self, platform):
        # The block, built in this order (the order of the calls is the order of the
        # statements, and so of the generated Verilog):
        #
        # * the table (``_table``): the banks' memories, counts and the active bank;
        # * the store path: S0, the search and F (``_lookup``), then C (``_store_class``);
        # * the rx path: the same lookup with its own read ports, then its C (``_rx_class``);
        # * programming (``_program``): P1, the pass, the decision;
        # * the error events of all three (``_errors``): the sticky ``errors``, the
        #   refusals' counters and ``capture``.
        m = Module()
        t = self._table(m)
        store = self._lookup(m, t, "a", self.store, route=True)
        store = self._store_class(m, store)
        rx = self._lookup(m, t, "rx", self.rx, route=False)
        rx = self._rx_class(m, rx)
        prog = self._program(m, t)
        self._errors(m, store, rx, prog)
        return m

    def _table(self, m):
        """The two banks: per bank, ``regions`` records (three memories, by reader) and the
        pivots (one memory per search level), the count of valid positions of each bank, and
        the active bank. Addresses are ``Cat(position, bank)``."""
        p = self._p
        n, stages = p.regions, addrmap_search_stages(p)
        # Every read is asynchronous, straight into a register or a compare: LUT RAM, not
        # block RAM (whose clock-to-output would start the compares).
        attrs = {LUTRAM_ATTR: 1}
        mems = dict(
            bounds=memory.Memory(shape=self._bounds_layout(), depth=2 * n, init=[],
                                 attrs=attrs),
            route=memory.Memory(shape=self._route_layout(), depth=2 * n, init=[], attrs=attrs),
            index=memory.Memory(shape=p.region_index_width, depth=2 * n, init=[],
                                attrs=attrs),
            **{f"pivot{s}": memory.Memory(shape=p.addr_width, depth=2 * (n >> (s + 1)),
                                          init=[], attrs=attrs)
               for s in range(stages)})
        for name, mem in mems.items():
            m.submodules[name] = mem
        counts = Array(Signal(range(n + 1), name=f"count{b}") for b in range(2))
        active = Signal()
        return SimpleNamespace(mems=mems, counts=counts, active=active, stages=stages)

    def _lookup(self, m, t, name, port, *, route):
        """S0, the search and F of one lookup path (the store path, ``name = "a"``, with
        ``route``: it also reads the translation and device; the rx path, ``"rx"``). Returns
        F's registers and the count of requests held (``held``, updated by the caller)."""
        p = self._p
        aw, stages = p.addr_width, t.stages
        payload = port.payload
        held = Signal(range(addrmap_queue_depth(p) + 1), name=f"{name}_held")
        m.d.comb += port.ready.eq(held < addrmap_queue_depth(p))

        def stage(tag):
            # ``other`` (the packet is for another device) rides along on the rx path only.
            return SimpleNamespace(
                valid=Signal(name=f"{name}_{tag}_valid"),
                req=Signal(payload.shape(), name=f"{name}_{tag}_req", reset_less=True),
                bank=Signal(name=f"{name}_{tag}_bank", reset_less=True),
                pos=Signal(stages, name=f"{name}_{tag}_pos", reset_less=True),
                other=C(0, 1) if route else Signal(name=f"{name}_{tag}_other",
                                                  reset_less=True))

        def follow(m, nxt, s, pos=None):
            m.d.sync += [nxt.valid.eq(s.valid), nxt.req.eq(s.req), nxt.bank.eq(s.bank),
                         nxt.pos.eq(s.pos if pos is None else pos)]
            if not route:
                m.d.sync += nxt.other.eq(s.other)

        s = stage("s0")
        m.d.sync += [s.valid.eq(port.valid & port.ready), s.req.eq(payload), s.bank.eq(t.active),
                     s.pos.eq(0)]
        if not route:
            m.d.sync += s.other.eq(payload.device != self.device_id)

        # The search, two stages per level from the top: read the pivot under the path so far
        # (and whether its position is below the bank's count) into registers, then compare
        # it with the address and take the branch.
        for level in reversed(range(stages)):
            rd = stage(f"r{level}")
            pivot = Signal(aw, name=f"{name}_r{level}_pivot", reset_less=True)
            inside = Signal(name=f"{name}_r{level}_inside", reset_less=True)
            rp = t.mems[f"pivot{level}"].read_port(domain="comb")
            m.d.comb += rp.addr.eq(Cat(s.pos[level + 1:stages], s.bank))
            follow(m, rd, s)
            m.d.sync += [pivot.eq(rp.data),
                         inside.eq((s.pos | (1 << level)) < t.counts[s.bank])]
            cmp = stage(f"c{level}")
            follow(m, cmp, rd, rd.pos | ((inside & (pivot <= rd.req.addr)) << level))
            s = cmp

        # The record at the position found, into registers, with ``addr + bytes``.
        rec = SimpleNamespace(stage=stage("rec"),
                              bounds=Signal(self._bounds_layout(), name=f"{name}_rec_bounds",
                                            reset_less=True),
                              route=Signal(self._route_layout(), name=f"{name}_rec_route",
                                           reset_less=True),
                              inside=Signal(name=f"{name}_rec_inside", reset_less=True),
                              stop=Signal(aw + 1, name=f"{name}_stop", reset_less=True))
        rb = t.mems["bounds"].read_port(domain="comb")
        m.d.comb += rb.addr.eq(Cat(s.pos, s.bank))
        follow(m, rec.stage, s)
        m.d.sync += [rec.bounds.eq(rb.data), rec.inside.eq(s.pos < t.counts[s.bank]),
                     rec.stop.eq(s.req.addr + s.req.bytes)]
        if route:
            rr = t.mems["route"].read_port(domain="comb")
            m.d.comb += rr.addr.eq(Cat(s.pos, s.bank))
            m.d.sync += rec.route.eq(rr.data)

        # F: three compares and the translation, in parallel, into registers.
        s = rec.stage
        f = SimpleNamespace(valid=Signal(name=f"{name}_f_valid"),
                            req=Signal(payload.shape(), name=f"{name}_f_req", reset_less=True),
                            other=stage("f").other,
                            hit=Signal(name=f"{name}_f_hit", reset_less=True),
                            fits=Signal(name=f"{name}_f_fits", reset_less=True),
                            mode=Signal(RegionMode, name=f"{name}_f_mode", reset_less=True),
                            device=Signal(p.device_width, name=f"{name}_f_device",
                                          reset_less=True),
                            target=Signal(aw, name=f"{name}_f_target", reset_less=True),
                            held=held)
        if not route:
            m.d.sync += f.other.eq(s.other)
        m.d.sync += [
            f.valid.eq(s.valid), f.req.eq(s.req),
            f.hit.eq(rec.inside & (rec.bounds.base <= s.req.addr)
                     & (s.req.addr < rec.bounds.end)),
            f.fits.eq(rec.stop <= rec.bounds.end),
            f.mode.eq(rec.bounds.mode),
        ]
        if route:
            m.d.sync += [f.device.eq(rec.route.device),
                         f.target.eq(s.req.addr + rec.route.delta)]
        return f

    def _store_class(self, m, f):
        """C of the store path: the class, the refusal, the push into the output queue and
        the queue's head onto ``net`` or ``mem``; the class counters."""
        p = self._p
        # A queued store: the local store (or the packet's fields: the translated address,
        # kind UPDATE), and where it goes.
        item_layout = data.StructLayout({"remote": 1, "device": p.device_width,
                                         "store": mem_store_layout(p)})
        m.submodules.out_queue = q = Queue(item_layout, depth=addrmap_queue_depth(p))
        local, remote, tracked, crosses = (Signal(name=n) for n in
                                           ("local", "remote", "tracked", "crosses"))
        ok = f.hit & f.fits
        m.d.comb += [
            local.eq(ok & (f.mode == RegionMode.LOCAL)),
            remote.eq(ok & (f.mode == RegionMode.REMOTE)),
            tracked.eq(ok & (f.mode == RegionMode.TRACKED)),
            crosses.eq(f.hit & ~f.fits),
        ]
        push = Signal()
        m.d.comb += [
            push.eq(f.valid & ~crosses),
            q.push.eq(push),
            q.data.remote.eq(remote),
            q.data.device.eq(f.device),
            q.data.store.addr.eq(Mux(remote, f.target, f.req.addr)),
            q.data.store.tile.eq(f.req.tile),
            q.data.store.bytes.eq(f.req.bytes),
            q.data.store.kind.eq(Mux(remote, WriteKind.UPDATE, f.req.kind)),
            q.data.store.tracked.eq(tracked),
        ]
        head = q.o.payload
        net, mem = self.net, self.mem
        m.d.comb += [
            net.valid.eq(q.o.valid & head.remote),
            mem.valid.eq(q.o.valid & ~head.remote),
            q.o.ready.eq(Mux(head.remote, net.ready, mem.ready)),
            net.payload.device.eq(head.device),
            *(net.payload[k].eq(head.store[k]) for k in ("addr", "kind", "tile", "bytes")),
            mem.payload.eq(head.store),
        ]
        self._hold(m, f.held, self.store, f.valid & crosses, q)
        st = self.stats
        unmapped = f.valid & ~f.hit
        for counter, event in ((st.local, f.valid & local), (st.tracked, f.valid & tracked),
                               (st.remote, f.valid & remote), (st.unmapped, unmapped)):
            count(m, counter, event)
        return SimpleNamespace(f=f, crosses=f.valid & crosses)

    def _hold(self, m, held, port, refused, q):
        """The count of requests held: up by one per request accepted on ``port``, down by
        one per request ``refused`` in C and per item taken from the queue ``q``."""
        taken = q.o.valid & q.o.ready
        m.d.sync += held.eq(held + (port.valid & port.ready) - refused - taken)

    def _rx_class(self, m, f):
        """C of the rx path: the checks, the refusals and the push into ``rx_mem``'s queue."""
        p = self._p
        # The items in LUT RAM read at the head pointer (``head="memory"``): the pop (from
        # ``rx_mem.ready``) moves a pointer and enables no register as wide as an item.
        m.submodules.rx_queue = q = Queue(mem_store_layout(p), depth=addrmap_queue_depth(p),
                                          head="memory")
        in_receive, in_remote, accept = (Signal(name=f"rx_{n}") for n in
                                         ("in_receive", "in_remote", "accept"))
        m.d.comb += [
            in_receive.eq(f.hit & ((f.mode == RegionMode.LOCAL)
                                   | (f.mode == RegionMode.TRACKED))),
            in_remote.eq(f.hit & (f.mode == RegionMode.REMOTE)),
            accept.eq(~f.other & in_receive & f.fits),
        ]
        events = SimpleNamespace(
            rx_misrouted=f.valid & f.other,
            rx_remote=f.valid & ~f.other & in_remote,
            rx_unmapped=f.valid & ~f.other & ~in_remote & ~in_receive,
            rx_crosses=f.valid & ~f.other & in_receive & ~f.fits)
        m.d.comb += [
            q.push.eq(f.valid & accept),
            q.data.addr.eq(f.req.addr), q.data.tile.eq(f.req.tile),
            q.data.bytes.eq(f.req.bytes), q.data.kind.eq(f.req.kind),
            q.data.tracked.eq(f.mode == RegionMode.TRACKED),
        ]
        wiring.connect(m, q.o, wiring.flipped(self.rx_mem))
        self._hold(m, f.held, self.rx, f.valid & ~accept, q)
        return SimpleNamespace(f=f, events=events)

    def _program(self, m, t):
        """P1, the pass (three stages deep) and the decision. Returns the request and its
        error events."""
        p = self._p
        aw, n, stages = p.addr_width, p.regions, t.stages
        req = self.program.payload
        # ``program.ready`` is a register: ``busy == 0``, one cycle ahead.
        busy = Signal(range(addrmap_program_cycles(p)), name="p_busy")
        ready = Signal(name="p_ready", init=1)
        take = Signal()
        m.d.comb += [self.program.ready.eq(ready), take.eq(self.program.valid & ready)]
        m.d.sync += ready.eq(~take & (busy <= 1))
        with m.If(take):
            m.d.sync += busy.eq(addrmap_program_cycles(p) - 1)
        with m.Elif(busy != 0):
            m.d.sync += busy.eq(busy - 1)

        # P1: the request, its end and translation, and the checks of its fields alone.
        r = SimpleNamespace(req=Signal(region_program_layout(p), name="p_req", reset_less=True),
                            end=Signal(aw + 1, name="p_end", reset_less=True),
                            delta=Signal(aw, name="p_delta", reset_less=True),
                            bad=Signal(name="p_bad", reset_less=True))
        with m.If(take):
            m.d.sync += [
                r.req.eq(req), r.end.eq(req.base + req.size),
                r.delta.eq(req.remote_base - req.base),
                r.bad.eq((req.size == 0) | (req.mode.as_value() > RegionMode.TRACKED.value)),
            ]
        new = r.req.valid
        # The phase: 1 .. n read the active bank's positions 0 .. n - 1 (stage 1, into
        # ``e1``), each compared one cycle later (stage 2, into ``e2``) and copied into the
        # other bank one cycle after that (stage 3); in phase n + 4 the written region goes
        # in at its rank and the verdict is taken (from registers). Then idle (0).
        phase = Signal(range(n + 5), name="p_phase")
        with m.If(take):
            m.d.sync += phase.eq(1)
        with m.Elif(phase == n + 4):
            m.d.sync += phase.eq(0)
        with m.Elif(phase != 0):
            m.d.sync += phase.eq(phase + 1)
        reading = Signal(name="p_reading")
        deciding = Signal(name="p_deciding")     # phase n + 4, as a register
        m.d.comb += reading.eq((phase != 0) & (phase <= n))
        m.d.sync += deciding.eq(phase == n + 3)
        old = t.active                                  # the bank read; the other is written

        # Stage 1: position ``phase - 1`` of the old bank, into registers, with whether it is
        # below the count; stage 2 keeps it when it is also not the region being written
        # (which the write replaces or removes).
        # ``k`` is ``phase - 1`` while reading, kept in a register of its own (0 at the take,
        # one up per reading cycle but the last), so that the region RAMs' read address comes
        # from flip-flops, not through a subtractor.
        k = Signal(range(n), name="p_k")
        with m.If(take):
            m.d.sync += k.eq(0)
        with m.Elif(reading & (k != n - 1)):
            m.d.sync += k.eq(k + 1)
        e_at = Cat(k, old)
        rb = t.mems["bounds"].read_port(domain="comb")
        rr = t.mems["route"].read_port(domain="comb")
        ri = t.mems["index"].read_port(domain="comb")
        m.d.comb += [rb.addr.eq(e_at), rr.addr.eq(e_at), ri.addr.eq(e_at)]

        def entry(name):
            return SimpleNamespace(
                valid=Signal(name=f"{name}_valid"),
                bounds=Signal(self._bounds_layout(), name=f"{name}_bounds", reset_less=True),
                route=Signal(self._route_layout(), name=f"{name}_route", reset_less=True),
                index=Signal(p.region_index_width, name=f"{name}_index", reset_less=True),
                after=Signal(name=f"{name}_after", reset_less=True),
                lo=Signal(name=f"{name}_lo", reset_less=True),
                hi=Signal(name=f"{name}_hi", reset_less=True))
        e1, e2 = entry("p_e1"), entry("p_e2")
        m.d.sync += [
            e1.valid.eq(reading & (phase <= t.counts[old])),
            e1.bounds.eq(rb.data), e1.route.eq(rr.data), e1.index.eq(ri.data),
        ]
        kept = Signal(name="p_kept")            # valid, and not the region being written
        m.d.comb += kept.eq(e1.valid & (e1.index != r.req.index))
        # Stage 2: does it sort after the written region, and the two halves of the overlap
        # check, each compare into its own register; stage 3 ANDs them into the clash.
        clash = Signal(name="p_clash")
        m.d.sync += [e2.valid.eq(kept), e2.bounds.eq(e1.bounds), e2.route.eq(e1.route),
                     e2.index.eq(e1.index), e2.after.eq(new & (r.req.base < e1.bounds.base)),
                     e2.lo.eq(r.req.base < e1.bounds.end), e2.hi.eq(e1.bounds.base < r.end)]
        with m.If(take):
            m.d.sync += clash.eq(0)
        with m.Elif(e2.valid & new & e2.lo & e2.hi):
            m.d.sync += clash.eq(1)
        # Stage 3: copy it to position ``o`` of the other bank, one further when it sorts after
        # the written region; ``rank`` counts those before it.
        o = Signal(range(n + 1), name="p_o")
        rank = Signal(range(n + 1), name="p_rank")
        with m.If(take):
            m.d.sync += [o.eq(0), rank.eq(0)]
        with m.Elif(e2.valid):
            m.d.sync += [o.eq(o + 1), rank.eq(rank + ~e2.after)]
        # The writes into the other bank, from registers (``w``: loaded by stage 3, or in
        # phase n + 3 with the written region at its rank; written the cycle after).
        preparing = Signal(name="p_preparing")
        m.d.comb += preparing.eq(phase == n + 3)
        w = SimpleNamespace(
            at=Signal(range(n + 1), name="p_w_at", reset_less=True),
            bank=Signal(name="p_w_bank", reset_less=True),
            bounds=Signal(self._bounds_layout(), name="p_w_bounds", reset_less=True),
            route=Signal(self._route_layout(), name="p_w_route", reset_less=True),
            index=Signal(p.region_index_width, name="p_w_index", reset_less=True),
            en=Signal(name="p_w_en"),
            pivot=Signal(stages, name="p_w_pivot"))
        at = Signal(range(n + 1), name="p_at")          # the position to write
        emit = Signal(name="p_emit")
        m.d.comb += [at.eq(Mux(preparing, rank, o + e2.after)),
                     emit.eq(e2.valid | (preparing & new))]
        m.d.sync += [w.at.eq(at), w.bank.eq(~old), w.en.eq(emit),
                     w.pivot.eq(Cat(emit & at[s] & (at[:s] == 0) for s in range(stages)))]
        with m.If(preparing):
            m.d.sync += [w.bounds.base.eq(r.req.base), w.bounds.end.eq(r.end),
                         w.bounds.mode.eq(r.req.mode), w.route.delta.eq(r.delta),
                         w.route.device.eq(r.req.device), w.index.eq(r.req.index)]
        with m.Else():
            m.d.sync += [w.bounds.eq(e2.bounds), w.route.eq(e2.route), w.index.eq(e2.index)]
        w_at = Cat(w.at[:stages], w.bank)
        for name, value in (("bounds", w.bounds), ("route", w.route), ("index", w.index)):
            wp = t.mems[name].write_port()
            m.d.comb += [wp.addr.eq(w_at), wp.data.eq(value), wp.en.eq(w.en)]
        # Unless it is 0, a position's pivot is at the level of its lowest set bit.
        for s in range(stages):
            wp = t.mems[f"pivot{s}"].write_port()
            m.d.comb += [wp.addr.eq(Cat(w.at[s + 1:stages], w.bank)),
                         wp.data.eq(w.bounds.base), wp.en.eq(w.pivot[s])]

        # The verdict, registered the cycle before the decision (``clash`` is complete once
        # the last position has been compared); then reject, or make the other bank active,
        # with its count.
        bad = Signal(name="p_bad_all", reset_less=True)
        m.d.sync += bad.eq(r.bad | (r.end[aw] & r.end[:aw].any()))     # end > 2**aw
        verdict = SimpleNamespace(bad=Signal(name="p_verdict_bad", reset_less=True),
                                  overlap=Signal(name="p_verdict_overlap", reset_less=True))
        m.d.sync += [verdict.bad.eq(new & bad), verdict.overlap.eq(new & ~bad & clash)]
        events = SimpleNamespace(bad_region=deciding & verdict.bad,
                                 overlap=deciding & verdict.overlap)
        with m.If(deciding & ~verdict.bad & ~verdict.overlap):
            m.d.sync += [t.active.eq(~old), t.counts[~old].eq(o + new)]
        return SimpleNamespace(req=r.req, events=events)

    def _errors(self, m, store, rx, prog):
        """The error events of the store path, the rx path and programming: the sticky
        ``errors``, the refusals' counters and ``capture``, registered together."""
        events = Signal(addrmap_errors_layout(self._p))
        m.d.comb += [events.store_crosses.eq(store.crosses),
                     *(events[k].eq(v) for k, v in vars(rx.events).items()),
                     *(events[k].eq(v) for k, v in vars(prog.events).items())]
        sticky_errors(m, self.errors, self.clear, events)
        for name in ("store_crosses", *vars(rx.events)):
            count(m, self.stats[name], events[name])
        # The details of this cycle's events, registered with them: a refused store's win
        # over a refused packet's, which win over a rejected region write's.
        cap, st, pk, req = self.capture, store.f.req, rx.f.req, prog.req
        with m.If(store.crosses):
            m.d.sync += [cap.addr.eq(st.addr), cap.device.eq(store.f.device),
                         cap.tile.eq(st.tile)]
        with m.Elif(Cat(*vars(rx.events).values()).any()):
            m.d.sync += [cap.addr.eq(pk.addr), cap.device.eq(pk.device), cap.tile.eq(pk.tile)]
        with m.Elif(prog.events.bad_region | prog.events.overlap):
            m.d.sync += [cap.addr.eq(req.base), cap.device.eq(req.device), cap.tile.eq(0)]
