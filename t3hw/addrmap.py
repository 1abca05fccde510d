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

The same table classifies what arrives from the network (``rx``): a packet whose address
lies in a ``TRACKED`` region is written with ``tracked`` set, every other one untracked. So
the receiving GPU, which arms its tracker, also decides which arrivals it counts; the
sender does not. This second lookup has its own comparators and output register, and never
waits for the store path.
A store is classified by its address alone (a store that crosses a region end is sent where
its first byte belongs). The programming logic keeps the table well formed: regions never
overlap and are never empty, so at most one region matches.
"""

import operator
from functools import reduce
from types import SimpleNamespace

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .layouts import (RegionMode, WriteKind, addrmap_errors_layout, addrmap_stats_layout,
                      mem_store_layout, net_packet_layout, region_layout,
                      region_program_layout, store_layout)
from .params import EngineParams, check_params


__all__ = ["AddrMap"]


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
        Producer stores. Ready when the classified store ahead of it (stage A) is empty or
        moves into its output register this cycle (so a stalled output holds every store,
        in order).
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
        Packets from the network for this GPU (``device`` is not looked at). Ready when
        ``rx_mem`` is empty or being taken.
    rx_mem : Out(stream.Signature(mem_store_layout))
        Each packet as a local store (its ``kind``, ``tile`` and ``bytes``), ``tracked`` when
        its address lies in a ``TRACKED`` region. ``valid`` is a register (latency 1).
    errors : Out(addrmap_errors_layout)
        Sticky error bits; each stays set until the same bit of ``clear`` is pulsed (a bit set
        in the same cycle as its clear stays set).
    clear : In(addrmap_errors_layout)
        Write-one-to-clear strobe for ``errors``.
    stats : Out(addrmap_stats_layout)
        Wrapping counters of the stores accepted, by class (counted as they leave stage A).

    Latency 2 cycles (a store accepted in cycle t is valid at its output in t + 2);
    throughput one store per cycle while the outputs are ready. Stage A classifies: two
    compares (``base <= addr < end``) and one add (``addr + remote_base - base``) per region,
    all in parallel on the region's stored ``end`` and translation, which programming
    computes, so its path is one ``addr_width`` carry chain; it registers the hit lines and
    every region's result. Stage B selects with the registered one-hot hit (an AND-OR, which
    grows with ``log2(regions)``) into the output registers, and counts. Received packets
    take one cycle (one compare per region, then the ``tracked`` bit). Programming takes three
    stages: the new region's end and translation are computed and registered, then it is
    compared with every other region, then the verdict is taken and the region written.
    Region valid bits and the outputs' ``valid`` are reset; the derived ``end`` and
    translation are not (they are only read while their region is valid).
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "store":   In(stream.Signature(store_layout(params))),
            "program": In(stream.Signature(region_program_layout(params), always_ready=True)),
            "net":     Out(stream.Signature(net_packet_layout(params))),
            "mem":     Out(stream.Signature(mem_store_layout(params))),
            "rx":      In(stream.Signature(net_packet_layout(params))),
            "rx_mem":  Out(stream.Signature(mem_store_layout(params))),
            "errors":  Out(addrmap_errors_layout(params)),
            "clear":   In(addrmap_errors_layout(params)),
            "stats":   Out(addrmap_stats_layout(params)),
        })

    @property
    def params(self):
        return self._p

    def elaborate(self, platform):
        p = self._p
        m = Module()
        aw = p.addr_width
        regions = [Signal(region_layout(p), name=f"region{i}") for i in range(p.regions)]
        # Derived at programming time and kept beside each region, so that no lookup adds
        # two table fields: the end ``base + size`` (``aw + 1`` bits, it may be 2**aw) and
        # the translation ``remote_base - base`` (mod 2**aw).
        ends   = [Signal(aw + 1, name=f"region{i}_end", reset_less=True)
                  for i in range(p.regions)]
        deltas = [Signal(aw, name=f"region{i}_delta", reset_less=True)
                  for i in range(p.regions)]

        # --- classify, stage A: two compares and one add per region, in parallel ------------
        # (a region matches when base <= addr < end; every region computes its own
        # translated address). Registered with the store: the hit lines, every region's
        # translated address, mode and device (a copy, so that a region written meanwhile
        # does not change a store already classified).
        st = self.store.payload
        hits = Signal(p.regions)
        for i, r in enumerate(regions):
            m.d.comb += hits[i].eq(r.valid & (st.addr >= r.base) & (st.addr < ends[i]))
        a_valid   = Signal()
        a_store   = Signal(store_layout(p), reset_less=True)
        a_hits    = Signal(p.regions, reset_less=True)
        a_targets = [Signal(aw, name=f"a_target{i}", reset_less=True) for i in range(p.regions)]
        a_modes   = [Signal(RegionMode, name=f"a_mode{i}", reset_less=True)
                     for i in range(p.regions)]
        a_devices = [Signal(p.device_width, name=f"a_device{i}", reset_less=True)
                     for i in range(p.regions)]

        # --- stage B: select with the registered one-hot hit, into the output registers ----
        # At most one region hits (the table never overlaps), so the select is an AND-OR of
        # the hit lines, not a priority chain.
        def select(values):
            return reduce(operator.or_, (Mux(a_hits[i], v, 0) for i, v in enumerate(values)))
        mode   = Signal(RegionMode)                 # LOCAL (0) when no region hits
        device = Signal(p.device_width)
        target = Signal(aw)                         # the translated address of the hit region
        m.d.comb += [
            mode.eq(select([x.as_value() for x in a_modes])),
            device.eq(select(a_devices)),
            target.eq(select(a_targets)),
        ]
        hit = a_hits.any()
        remote = mode == RegionMode.REMOTE

        net, mem = self.net, self.mem
        advance = Signal()                          # stage A moves into its output register
        m.d.comb += [
            advance.eq(a_valid & Mux(remote, ~net.valid | net.ready, ~mem.valid | mem.ready)),
            self.store.ready.eq(~a_valid | advance),
        ]
        take = self.store.valid & self.store.ready
        with m.If(take):
            m.d.sync += [a_valid.eq(1), a_store.eq(st), a_hits.eq(hits)]
            for i, r in enumerate(regions):
                m.d.sync += [a_targets[i].eq(st.addr + deltas[i]), a_modes[i].eq(r.mode),
                             a_devices[i].eq(r.device)]
        with m.Elif(advance):
            m.d.sync += a_valid.eq(0)

        with m.If(net.ready):
            m.d.sync += net.valid.eq(0)
        with m.If(mem.ready):
            m.d.sync += mem.valid.eq(0)
        with m.If(advance & remote):
            m.d.sync += [
                net.valid.eq(1),
                net.payload.device.eq(device),
                net.payload.addr.eq(target),
                net.payload.kind.eq(WriteKind.UPDATE),
                net.payload.tile.eq(a_store.tile),
                net.payload.bytes.eq(a_store.bytes),
            ]
        with m.If(advance & ~remote):
            m.d.sync += [
                mem.valid.eq(1),
                mem.payload.addr.eq(a_store.addr),
                mem.payload.tile.eq(a_store.tile),
                mem.payload.bytes.eq(a_store.bytes),
                mem.payload.kind.eq(a_store.kind),
                mem.payload.tracked.eq(mode == RegionMode.TRACKED),
            ]

        s = self.stats
        with m.If(advance):
            with m.If(~hit):
                m.d.sync += s.unmapped.eq(s.unmapped + 1)
            with m.Elif(mode == RegionMode.LOCAL):
                m.d.sync += s.local.eq(s.local + 1)
            with m.Elif(mode == RegionMode.TRACKED):
                m.d.sync += s.tracked.eq(s.tracked + 1)
            with m.Else():
                m.d.sync += s.remote.eq(s.remote + 1)

        # --- rx: the same table, its own comparators, tracked or not ----------------------
        rx, rx_mem = self.rx.payload, self.rx_mem
        rx_hit = Signal(p.regions)
        for i, r in enumerate(regions):
            m.d.comb += rx_hit[i].eq(r.valid & (r.mode == RegionMode.TRACKED)
                                     & (rx.addr >= r.base) & (rx.addr < ends[i]))
        m.d.comb += self.rx.ready.eq(~rx_mem.valid | rx_mem.ready)
        with m.If(rx_mem.ready):
            m.d.sync += rx_mem.valid.eq(0)
        with m.If(self.rx.valid & self.rx.ready):
            m.d.sync += [
                rx_mem.valid.eq(1),
                rx_mem.payload.addr.eq(rx.addr),
                rx_mem.payload.tile.eq(rx.tile),
                rx_mem.payload.bytes.eq(rx.bytes),
                rx_mem.payload.kind.eq(rx.kind),
                rx_mem.payload.tracked.eq(rx_hit.any()),
            ]

        # --- program: three stages ----------------------------------------------------------
        # P1 registers the request with its end, its translation and the checks on it alone;
        # P2 compares it with every region (two compares each, all in parallel) and
        # registers the clashes; P3 decides and writes. Requests are checked in order, as
        # if each were written before the next is compared: P2 also compares with the
        # request in P3 (written at the end of this cycle), in place of the region it
        # replaces or removes.
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
            p2.bad.eq((req.size == 0) | (end > (1 << aw)) |
                      (req.mode.as_value() > RegionMode.TRACKED.value)),
        ]
        m.d.sync += [getattr(p3, k).eq(getattr(p2, k)) for k in ("valid", "req", "end",
                                                                 "delta", "bad")]

        # P3: the request's verdict and write (from registers only).
        p3_clash = Signal(p.regions + 1, reset_less=True)    # regions, then the P3 ahead
        write = Signal()
        m.d.comb += write.eq(p3.valid & (~p3.req.valid | (~p3.bad & ~p3_clash.any())))
        set_err = Signal(addrmap_errors_layout(p))
        m.d.comb += [
            set_err.bad_region.eq(p3.valid & p3.req.valid & p3.bad),
            set_err.overlap.eq(p3.valid & p3.req.valid & ~p3.bad & p3_clash.any()),
        ]
        for i, r in enumerate(regions):
            with m.If(write & (p3.req.index == i)):
                for name in region_layout(p).members:
                    m.d.sync += r[name].eq(p3.req[name])
                m.d.sync += [ends[i].eq(p3.end), deltas[i].eq(p3.delta)]

        # P2: compare with the table as P3 leaves it.
        clash = Signal(p.regions + 1)
        for i, r in enumerate(regions):
            replaced = write & (p3.req.index == i)
            m.d.comb += clash[i].eq((p2.req.index != i) & r.valid & ~replaced &
                                    (p2.req.base < ends[i]) & (r.base < p2.end))
        m.d.comb += clash[p.regions].eq(write & p3.req.valid & (p3.req.index != p2.req.index)
                                        & (p2.req.base < p3.end) & (p3.req.base < p2.end))
        m.d.sync += p3_clash.eq(clash)

        m.d.sync += self.errors.eq((self.errors.as_value() & ~self.clear.as_value())
                                   | set_err.as_value())
        return m
