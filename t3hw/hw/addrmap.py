# SPDX-License-Identifier: Apache-2.0
"""The address map: classifies every producer store by a small region table.

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
its region). This second lookup has its own comparators and registers, and never waits
for the store path.
The programming logic keeps the table well formed: regions never overlap and are never
empty, so at most one region matches.
"""

import operator
from functools import reduce
from types import SimpleNamespace

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from t3hw.spec.layouts import (RegionMode, WriteKind, addrmap_capture_layout,
                               addrmap_errors_layout, addrmap_stats_layout, mem_store_layout,
                               net_packet_layout, region_layout, region_program_layout,
                               store_layout)
from t3hw.spec.params import EngineParams, check_params
from .status import count, sticky_errors


__all__ = ["AddrMap"]

#: The rx path's region lines: the modes of each.
_RX_KINDS = {"tracked": (RegionMode.TRACKED,), "receive": (RegionMode.LOCAL, RegionMode.TRACKED),
             "remote": (RegionMode.REMOTE,)}


class AddrMap(wiring.Component):
    """Region table and store classifier.

    Parameters
    ----------
    params : EngineParams
        Uses ``regions``, ``addr_width``, ``device_width``, ``tile_width``, ``burst_bytes``
        and ``counter_width``.

    Members
    -------
    store : In(stream.Signature(store_layout))
        Producer stores. Ready when the classified store ahead of it (stage A) is empty, or
        moves into its output register this cycle, or is refused (so a stalled output holds
        every store, in order).
    program : In(stream.Signature(region_program_layout, always_ready=True))
        Region writes (from the register block), one per cycle. ``valid = 0`` removes region
        ``index``. A write with ``valid = 1`` replaces region ``index`` unless it is rejected:
        size 0, ``base + size > 2**addr_width`` or an unknown mode sets ``bad_region``;
        overlapping another valid region sets ``overlap``. A rejected write leaves the table
        unchanged. A write is checked and applied over the two cycles after it (so its error
        bit is set three cycles after it), and applies to stores and packets accepted from
        three cycles after it on. Writes in consecutive cycles are checked in order.
    net : Out(stream.Signature(net_packet_layout))
        Stores to ``REMOTE`` regions, as ``UPDATE`` packets. ``valid`` is a register.
    mem : Out(stream.Signature(mem_store_layout))
        Every other store, with ``tracked`` set for ``TRACKED`` regions. ``valid`` is a
        register.
    rx : In(stream.Signature(net_packet_layout))
        Packets from the network. Ready when the checked packet ahead of it (rx stage A) is
        empty, or moves into ``rx_mem`` this cycle, or is refused (so a stalled ``rx_mem``
        holds two packets, in order).
    rx_mem : Out(stream.Signature(mem_store_layout))
        Each packet accepted, as a local store (its ``kind``, ``tile`` and ``bytes``),
        ``tracked`` when its region is ``TRACKED``, checked against the table and
        ``device_id`` as they stood when the packet was taken. ``valid`` is a register
        (latency 2).
    device_id : In(device_width)
        This GPU's device number (from the register block's ``DEVICE_ID``); packets for
        another device are refused.
    errors : Out(addrmap_errors_layout)
        Sticky error bits; each stays set until the same bit of ``clear`` is pulsed (a bit set
        in the same cycle as its clear stays set). A refused store or packet sets its bit in
        the cycle after it leaves stage A; a rejected region write three cycles after it.
    clear : In(addrmap_errors_layout)
        Write-one-to-clear strobe for ``errors``.
    stats : Out(addrmap_stats_layout)
        Wrapping counters: the stores by class, counted as they leave stage A, and each
        refusal under its error's name.
    capture : Out(addrmap_capture_layout)
        The details of the error events that ``errors`` shows set in this cycle, registered
        with them and held until the next event: a refused store's address, its region's
        device and its tile; a refused packet's address, device and tile; a rejected region
        write's base and device (tile 0). When events coincide, the store's win, then the
        packet's, then the region write's.

    Latency 2 cycles (a store accepted in cycle t is valid at its output in t + 2);
    throughput one store per cycle while the outputs are ready (a refused store leaves stage
    A at once). Stage A classifies: three compares (``base <= addr < end`` and
    ``addr + bytes <= end``) and one add (``addr + remote_base - base``) per region, all in
    parallel on the region's stored ``end`` and translation, which programming computes;
    its paths are one ``addr_width`` carry chain into a register, except the crossing
    check, whose compare follows the one shared add ``addr + bytes`` (two chains; not on the
    path of any enable). It registers the compares and every region's valid bit and
    result. Stage B forms the one-hot hit from those registers and selects with it (an
    AND-OR, which grows with ``log2(regions)``) into the output registers, and counts; the
    store's class (local, remote, tracked, unmapped or crossing), which ``store.ready`` and
    the counters wait on, is an AND-OR of stage A's registers alone.
    Received packets take two cycles, one packet per cycle while ``rx_mem`` is ready (a
    refused packet leaves rx stage A at once): rx stage A compares the packet with every
    region (the same three compares each, in parallel) and its device with ``device_id``,
    and registers them with the packet and which regions are valid and ``TRACKED``,
    ``LOCAL`` or ``TRACKED``, and ``REMOTE``; rx stage B ANDs and ORs them into the verdict
    and ``rx_mem``'s ``tracked`` bit. ``rx.ready`` comes from registers and ``rx_mem.ready``
    only. Programming takes three stages: the new region's end and
    translation are computed and registered, then it is compared with every other region
    (each compare into its own register) and its end with the top of the address space,
    then the compares are ANDed and ORed into the clash, the verdict is taken and the region
    written. Region valid bits, the stages' and outputs' ``valid``, ``errors``, ``stats``
    and ``capture`` are reset; the derived ``end`` and translation are not (they are only
    read while their region is valid), nor are the stages' other registers.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "store":     In(stream.Signature(store_layout(params))),
            "program":   In(stream.Signature(region_program_layout(params), always_ready=True)),
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

    def elaborate(self, platform):
        # The block, built in this order (the order of the calls is the order of the
        # statements, and so of the generated Verilog):
        #
        # * the region table (``_table``): the regions and, beside each, its end and its
        #   translation, which programming computes;
        # * the store path: stage A compares the address with every region and registers the
        #   compares with the store, stage B selects from them and decides the store's class
        #   (``_classify``), loads the ``net`` or ``mem`` output register
        #   (``_store_outputs``) and counts the store by class (``_store_counters``);
        # * the rx path (``_rx_path``): the same lookup with its own comparators, into
        #   ``rx_mem``;
        # * programming, three stages: P1 registers the request and P2 checks its fields
        #   (``_program_stages``), P3 decides and writes the region (``_program_write``), and
        #   P2 compares the request with every region and the write ahead
        #   (``_program_compare``);
        # * the error events of all three (``_errors``): the sticky ``errors``, the
        #   refusals' counters and ``capture``.
        m = Module()
        t = self._table()
        store = self._classify(m, t)
        self._store_outputs(m, store)
        self._store_counters(m, store)
        rx = self._rx_path(m, t)
        prog = self._program_stages(m)
        p3_lines, we, prog_events = self._program_write(m, t, prog)
        self._program_compare(m, t, prog, p3_lines, we)
        self._errors(m, store, rx, prog, prog_events)
        return m

    def _table(self):
        """The region table: ``regions`` (one :func:`region_layout` register each) and, beside
        each, ``ends`` and ``deltas``, derived at programming time so that no lookup adds two
        table fields: the end ``base + size`` (``addr_width + 1`` bits, it may be
        ``2**addr_width``) and the translation ``remote_base - base`` (mod
        ``2**addr_width``)."""
        p = self._p
        aw = p.addr_width
        regions = [Signal(region_layout(p), name=f"region{i}") for i in range(p.regions)]
        ends   = [Signal(aw + 1, name=f"region{i}_end", reset_less=True)
                  for i in range(p.regions)]
        deltas = [Signal(aw, name=f"region{i}_delta", reset_less=True)
                  for i in range(p.regions)]
        return SimpleNamespace(regions=regions, ends=ends, deltas=deltas)

    def _compares(self, m, t, addr, nbytes, name):
        """Stage A's lookup of a request (``addr``, ``nbytes``) in the table ``t``: per
        region, ``addr >= base``, ``addr < end`` (each one carry chain straight into its own
        register: ``ge``, ``lt``) and ``addr + nbytes <= end`` (``fits``: the request's own
        end, one add shared by every region, then one compare into the register). Returns
        the registers and their updates."""
        p = self._p
        lines = SimpleNamespace(**{k: Signal(p.regions, name=f"{name}_{k}", reset_less=True)
                                   for k in ("ge", "lt", "fits")})
        stop = Signal(max(p.addr_width, len(nbytes)) + 1, name=f"{name}_stop")
        m.d.comb += stop.eq(addr + nbytes)      # one past the request's last byte
        update = []
        for i, r in enumerate(t.regions):
            update += [lines.ge[i].eq(addr >= r.base), lines.lt[i].eq(addr < t.ends[i]),
                       lines.fits[i].eq(stop <= t.ends[i])]
        return lines, update

    def _classify(self, m, t):
        """The store path's stages A and B up to the outputs: stage A's registers and their
        load, stage B's select of the hit region's device and translated address, the
        store's class, and ``store.ready``. Returns what the outputs and counters use."""
        p = self._p
        aw = p.addr_width
        regions = t.regions
        # --- classify, stage A: three compares and one add per region, in parallel ---------
        # (a region matches when base <= addr < end; every region computes its own
        # translated address). Registered with the store: the compares, every region's
        # valid bit, translated address and device, and the valid regions of each mode (a
        # copy, so that a region written meanwhile does not change a store already
        # classified).
        st = self.store.payload
        a_valid   = Signal()
        a_store   = Signal(store_layout(p), reset_less=True)
        a_lines, a_update = self._compares(m, t, st.addr, st.bytes, "a")
        a_on      = Signal(p.regions, name="a_on", reset_less=True)     # valid regions
        a_targets = [Signal(aw, name=f"a_target{i}", reset_less=True) for i in range(p.regions)]
        a_devices = [Signal(p.device_width, name=f"a_device{i}", reset_less=True)
                     for i in range(p.regions)]
        # Per mode, the regions that are valid with that mode.
        a_modes   = {mode: Signal(p.regions, name=f"a_{mode.name.lower()}", reset_less=True)
                     for mode in (RegionMode.LOCAL, RegionMode.REMOTE, RegionMode.TRACKED)}

        # --- stage B: the one-hot hit lines from the registered compares, then the select
        # into the output registers. At most one region hits (the table never overlaps), so
        # the select is an AND-OR of the hit lines, not a priority chain.
        within = a_lines.ge & a_lines.lt
        a_hits = Signal(p.regions, name="a_hits")
        m.d.comb += a_hits.eq(a_on & within)

        def select(values):
            return reduce(operator.or_, (Mux(a_hits[i], v, 0) for i, v in enumerate(values)))
        device = Signal(p.device_width)
        target = Signal(aw)                         # the translated address of the hit region
        m.d.comb += [
            device.eq(select(a_devices)),
            target.eq(select(a_targets)),
        ]
        # The store's class, each an AND-OR of stage A's registers alone (no select), as
        # they decide ``store.ready`` and which counter counts. At most one is set: a store
        # that fits in its region is local, remote or tracked by the region's mode; one that
        # ends past it ``crosses`` (refused); one in no region is none of them (unmapped).
        local, remote, tracked = (Signal(name=n) for n in ("local", "remote", "tracked"))
        crosses = Signal(name="crosses")
        m.d.comb += [line.eq((a_modes[mode] & within & a_lines.fits).any())
                     for line, mode in ((local, RegionMode.LOCAL), (remote, RegionMode.REMOTE),
                                        (tracked, RegionMode.TRACKED))]
        m.d.comb += crosses.eq((a_hits & ~a_lines.fits).any())

        net, mem = self.net, self.mem
        net_free, mem_free = ~net.valid | net.ready, ~mem.valid | mem.ready
        advance = Signal()                          # stage A moves on (or is refused)
        m.d.comb += [
            advance.eq(a_valid & (crosses | Mux(remote, net_free, mem_free))),
            self.store.ready.eq(~a_valid | advance),
        ]
        # Stage A loads whenever it is ready, a store or not (its registers other than
        # ``a_valid`` are only read while it holds a store), so their enable is
        # ``store.ready`` alone.
        with m.If(self.store.ready):
            m.d.sync += [a_valid.eq(self.store.valid), a_store.eq(st), *a_update,
                         a_on.eq(Cat(r.valid for r in regions)),
                         *(a_modes[mode].eq(Cat(r.valid & (r.mode == mode) for r in regions))
                           for mode in a_modes)]
            for i, r in enumerate(regions):
                m.d.sync += [a_targets[i].eq(st.addr + t.deltas[i]),
                             a_devices[i].eq(r.device)]
        return SimpleNamespace(a_valid=a_valid, a_store=a_store, device=device, target=target,
                               local=local, remote=remote, tracked=tracked, crosses=crosses,
                               advance=advance, net_free=net_free, mem_free=mem_free)

    def _store_outputs(self, m, s):
        """Stage B's output registers, ``net`` and ``mem``, loaded from the classified store
        ``s`` (:meth:`_classify`)."""
        net, mem = self.net, self.mem
        # Each output's payload loads whenever the output is free, whether or not the store
        # goes there (the payload is only read while ``valid``), so its enable does not wait
        # on the store's class; ``valid`` is set when the store moves in.
        with m.If(net.ready):
            m.d.sync += net.valid.eq(0)
        with m.If(mem.ready):
            m.d.sync += mem.valid.eq(0)
        with m.If(s.advance & s.remote):
            m.d.sync += net.valid.eq(1)
        with m.If(s.advance & ~s.remote & ~s.crosses):
            m.d.sync += mem.valid.eq(1)
        with m.If(s.net_free):
            m.d.sync += [
                net.payload.device.eq(s.device),
                net.payload.addr.eq(s.target),
                net.payload.kind.eq(WriteKind.UPDATE),
                net.payload.tile.eq(s.a_store.tile),
                net.payload.bytes.eq(s.a_store.bytes),
            ]
        with m.If(s.mem_free):
            m.d.sync += [
                mem.payload.addr.eq(s.a_store.addr),
                mem.payload.tile.eq(s.a_store.tile),
                mem.payload.bytes.eq(s.a_store.bytes),
                mem.payload.kind.eq(s.a_store.kind),
                mem.payload.tracked.eq(s.tracked),
            ]

    def _store_counters(self, m, s):
        """The ``stats`` counters of the stores' classes, one per class of the store ``s``
        leaving stage A (a refused store is counted with the errors)."""
        # Each counter's enable is its class and the free output it goes to (the classes
        # exclude each other, so that is ``advance`` for a store of that class).
        st = self.stats
        unmapped = ~(s.local | s.remote | s.tracked | s.crosses)
        for counter, line, free in ((st.local, s.local, s.mem_free),
                                    (st.tracked, s.tracked, s.mem_free),
                                    (st.remote, s.remote, s.net_free),
                                    (st.unmapped, unmapped, s.mem_free)):
            count(m, counter, s.a_valid & line & free)

    def _rx_path(self, m, t):
        """The rx path: rx stage A (the packet and its compares with the table ``t``) and rx
        stage B (the checks and the ``tracked`` bit, into ``rx_mem``). Returns the packet in
        rx stage A and its error events (fields of :func:`addrmap_errors_layout`)."""
        p = self._p
        regions = t.regions
        # --- rx, stage A: the same table, its own comparators, three compares per region ---
        # Registered with the packet, with the regions that are valid and of each kind
        # (TRACKED; receiving: LOCAL or TRACKED; REMOTE), and whether the packet is for
        # another device, so a packet is checked against the table and the device number
        # as they stand when it is accepted.
        rx, rx_mem = self.rx.payload, self.rx_mem
        rx_a_valid = Signal()
        rx_a       = Signal(net_packet_layout(p), reset_less=True)
        rx_lines, rx_update = self._compares(m, t, rx.addr, rx.bytes, "rx_a")
        rx_on = {k: Signal(p.regions, name=f"rx_a_{k}", reset_less=True)
                 for k in ("tracked", "receive", "remote")}
        rx_a_other = Signal(name="rx_a_other", reset_less=True)    # device != device_id

        # --- rx, stage B: the checks and the tracked bit, ANDs and ORs of the registers ----
        # At most one region holds the address. The events exclude each other, in order:
        # another device; a REMOTE region; no receiving region; past the receiving region's
        # end. A packet is accepted when it is for this device and fits in a receiving one.
        within = rx_lines.ge & rx_lines.lt
        in_receive, in_remote, fits = (Signal(name=f"rx_{n}") for n in
                                       ("in_receive", "in_remote", "fits"))
        accept = Signal(name="rx_accept")
        m.d.comb += [
            in_receive.eq((rx_on["receive"] & within).any()),
            in_remote.eq((rx_on["remote"] & within).any()),
            fits.eq((rx_on["receive"] & within & rx_lines.fits).any()),
            accept.eq(~rx_a_other & fits),
        ]
        events = SimpleNamespace(
            rx_misrouted=rx_a_valid & rx_a_other,
            rx_remote=rx_a_valid & ~rx_a_other & in_remote,
            rx_unmapped=rx_a_valid & ~rx_a_other & ~in_remote & ~in_receive,
            rx_crosses=rx_a_valid & ~rx_a_other & in_receive & ~fits)

        rx_advance = Signal()                       # rx stage A moves on (or is refused)
        rx_free = ~rx_mem.valid | rx_mem.ready
        m.d.comb += [
            rx_advance.eq(rx_a_valid & (~accept | rx_free)),
            self.rx.ready.eq(~rx_a_valid | rx_advance),
        ]
        with m.If(self.rx.valid & self.rx.ready):
            m.d.sync += [
                rx_a_valid.eq(1),
                rx_a.eq(rx),
                *rx_update,
                rx_a_other.eq(rx.device != self.device_id),
                *(rx_on[k].eq(Cat(r.valid & reduce(operator.or_, (r.mode == mode
                                                                  for mode in modes))
                                  for r in regions)) for k, modes in _RX_KINDS.items()),
            ]
        with m.Elif(rx_advance):
            m.d.sync += rx_a_valid.eq(0)
        with m.If(rx_mem.ready):
            m.d.sync += rx_mem.valid.eq(0)
        with m.If(rx_advance & accept):
            m.d.sync += rx_mem.valid.eq(1)
        # The payload loads whenever ``rx_mem`` is free (it is only read while ``valid``).
        with m.If(rx_free):
            m.d.sync += [
                rx_mem.payload.addr.eq(rx_a.addr),
                rx_mem.payload.tile.eq(rx_a.tile),
                rx_mem.payload.bytes.eq(rx_a.bytes),
                rx_mem.payload.kind.eq(rx_a.kind),
                rx_mem.payload.tracked.eq((rx_on["tracked"] & within).any()),
            ]
        return SimpleNamespace(packet=rx_a, events=events)

    def _program_stages(self, m):
        """Programming's pipeline registers: P1 registers the request into P2 (``p2``) with
        its end, translation and field checks, P2 finds it ``bad`` and passes it on to P3
        (``p3``)."""
        p = self._p
        aw = p.addr_width
        # --- program: three stages ----------------------------------------------------------
        # P1 registers the request with its end, its translation and the checks on its
        # fields alone (size 0, unknown mode). P2 compares it with every region, two compares
        # each, all in parallel, each carry chain straight into its own register, and
        # registers, per region, whether the request writes it unless it clashes and whether
        # it removes it (so the end check, past the top of the address space, an OR of the
        # registered end's low bits, is not behind the add). P3 ANDs and ORs the registered
        # compares into the clash, decides and writes: each region's write enable is an
        # AND-OR of registers. Requests are checked in order, as if each were written
        # before the next is compared: P2 also compares with the request in P3 (written or
        # not at the end of this cycle), and registers which of its compares that write
        # makes stale (the region it replaces or removes; itself when it is not written).
        req = self.program.payload
        end = Signal(aw + 1)
        m.d.comb += end.eq(req.base + req.size)

        def pstage(name):
            return SimpleNamespace(
                valid=Signal(name=f"{name}_valid"),
                req=Signal(region_program_layout(p), name=f"{name}_req", reset_less=True),
                end=Signal(aw + 1, name=f"{name}_end", reset_less=True),
                delta=Signal(aw, name=f"{name}_delta", reset_less=True),
                bad=Signal(name=f"{name}_bad", reset_less=True))
        p2, p3 = pstage("p2"), pstage("p3")
        m.d.sync += [
            p2.valid.eq(self.program.valid),
            p2.req.eq(req),
            p2.end.eq(end),
            p2.delta.eq(req.remote_base - req.base),
            p2.bad.eq((req.size == 0) | (req.mode.as_value() > RegionMode.TRACKED.value)),
        ]
        bad = Signal()                                  # P2's request is rejected as bad
        m.d.comb += bad.eq(p2.bad | (p2.end[aw] & p2.end[:aw].any()))    # end > 2**aw
        m.d.sync += [getattr(p3, k).eq(getattr(p2, k)) for k in ("valid", "req", "end",
                                                                 "delta")]
        m.d.sync += p3.bad.eq(bad)
        return SimpleNamespace(p2=p2, p3=p3, bad=bad)

    def _program_write(self, m, t, prog):
        """P3: the request's clash, verdict and write into the table ``t`` (from registers
        only). Returns P2's compare registers (``p3_lines``, loaded by
        :meth:`_program_compare`), the regions written this cycle (``we``) and the error
        events (``bad_region``, ``overlap``)."""
        p3, n = prog.p3, self._p.regions
        # P2's registered compares, one bit per region, then one for the request in P3 (the
        # write ahead): the other valid with another index and the request's base below the
        # other's end (``lo``), the other's base below the request's end (``hi``), and the
        # other gone by the time the request is in P3 (``stale``: the region replaced or
        # removed by the write ahead; the write ahead not written). Per region, the request
        # in P3 writes it unless it clashes (``ok``: it passes the other checks) or removes
        # it (``rm``).
        p3_lines = SimpleNamespace(**{k: Signal(n + 1, name=f"p3_{k}", reset_less=True)
                                      for k in ("lo", "hi", "stale")},
                                   **{k: Signal(n, name=f"p3_{k}", reset_less=True)
                                      for k in ("ok", "rm")})

        # P3: the request's clash, verdict and write (from registers only).
        clash = Signal(n + 1)
        m.d.comb += clash.eq(p3_lines.lo & p3_lines.hi & ~p3_lines.stale)
        we = Signal(n)                                  # region i written this cycle
        m.d.comb += we.eq(p3_lines.rm | (p3_lines.ok & ~clash.any().replicate(n)))
        events = SimpleNamespace(bad_region=p3.valid & p3.req.valid & p3.bad,
                                 overlap=p3_lines.ok.any() & clash.any())
        for i, r in enumerate(t.regions):
            with m.If(we[i]):
                for name in region_layout(self._p).members:
                    m.d.sync += r[name].eq(p3.req[name])
                m.d.sync += [t.ends[i].eq(p3.end), t.deltas[i].eq(p3.delta)]
        return p3_lines, we, events

    def _program_compare(self, m, t, prog, p3_lines, we):
        """P2: the request's compares with every region of ``t`` and with the write ahead
        (the request in P3, which writes ``we``), and its per-region verdicts, into
        ``p3_lines``."""
        p2, p3, bad, n = prog.p2, prog.p3, prog.bad, self._p.regions
        # The mask is the top bit of the ``lo`` compare (``Cat(x, 0, ~on) < Cat(y, 0)`` is
        # ``on & (x < y)``), so that no gate follows the carry chain.
        others = [(r.base, t.ends[i], (p2.req.index != i) & r.valid)
                  for i, r in enumerate(t.regions)]
        others.append((p3.req.base, p3.end, p3.req.valid & (p3.req.index != p2.req.index)))
        for i, (o_base, o_end, on) in enumerate(others):
            m.d.sync += [p3_lines.lo[i].eq(Cat(p2.req.base, C(0, 1), ~on) < Cat(o_end, C(0, 1))),
                         p3_lines.hi[i].eq(o_base < p2.end)]
        m.d.sync += p3_lines.stale.eq(Cat(we, ~we.any()))
        for i in range(n):
            this = p2.valid & (p2.req.index == i)
            m.d.sync += [p3_lines.ok[i].eq(this & p2.req.valid & ~bad),
                         p3_lines.rm[i].eq(this & ~p2.req.valid)]

    def _errors(self, m, store, rx, prog, prog_events):
        """The error events of the store path (``store``, :meth:`_classify`), the rx path
        (``rx``, :meth:`_rx_path`) and programming (``prog``, ``prog_events``): the sticky
        ``errors``, the refusals' counters and ``capture``, registered together."""
        events = Signal(addrmap_errors_layout(self._p))
        store_crosses = store.a_valid & store.crosses
        m.d.comb += [events.store_crosses.eq(store_crosses),
                     *(events[k].eq(v) for k, v in vars(rx.events).items()),
                     *(events[k].eq(v) for k, v in vars(prog_events).items())]
        sticky_errors(m, self.errors, self.clear, events)
        for name in ("store_crosses", *vars(rx.events)):
            count(m, self.stats[name], events[name])
        # The details of this cycle's events, registered with them: a refused store's win
        # over a refused packet's, which win over a rejected region write's.
        cap, st, pk, req = self.capture, store.a_store, rx.packet, prog.p3.req
        with m.If(store_crosses):
            m.d.sync += [cap.addr.eq(st.addr), cap.device.eq(store.device), cap.tile.eq(st.tile)]
        with m.Elif(reduce(operator.or_, vars(rx.events).values())):
            m.d.sync += [cap.addr.eq(pk.addr), cap.device.eq(pk.device), cap.tile.eq(pk.tile)]
        with m.Elif(prog_events.bad_region | prog_events.overlap):
            m.d.sync += [cap.addr.eq(req.base), cap.device.eq(req.device), cap.tile.eq(0)]
