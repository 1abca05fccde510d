# SPDX-License-Identifier: Apache-2.0
"""The engine: one GPU's T3 hardware, every block wired together.

::

    store ──▶ [addrmap] ──mem──────────────▶ [arbiter] ──dram──▶ DRAM
     (GPU)        │  ▲ rx_mem ───────────────▶   │  ▲ ◀──dram_response
                  │  └─ net_rx ◀── network      │  │ ◀──occupancy
                  │ net                    track │  └── load (GPU reads) / load_response
                  ▼                              ▼
    net_tx ◀── [merge] ◀── packet ── [dma] ◀─trigger── [tracker]
                               read ──▶ arbiter.dma, arbiter.dma_response ──▶ response
    bus ──▶ [csr] ──▶ regions, descriptors, tracker entries, arbiter configuration, DEVICE_ID;
                 ◀── errors, first-error captures, tracker verdicts, counters, status;
                 ──▶ irq

* **Producer stores** (``store``) are classified by the address map: ``REMOTE`` regions
  leave on ``net_tx`` as update packets; the rest go to the arbiter's compute side, tracked
  when in a ``TRACKED`` region. **GPU reads** (``load``) go straight to the compute side.
* **Packets from the network** (``net_rx``) are classified by the same region table (tracked
  when in a ``TRACKED`` region) and enter the arbiter's communication side.
* The **arbiter** issues one request per cycle to the DRAM (``dram``) and shows every tracked
  write the DRAM takes to the **tracker**, whose triggers start the **DMA**'s pre-programmed
  descriptors; the DMA's reads enter the arbiter's communication side, their responses come
  back through ``dram_response``, and each returned burst leaves as a packet on ``net_tx``
  (merged round-robin with the address map's packets).
* The **register block** (``bus``) programs everything and reads every block's errors,
  counters and status (``docs/registers.md``).
* Every stream from one block to another (``mem``, ``rx_mem``, the DMA's reads and their
  responses, both packet streams into the merge) passes a register slice
  (:class:`~t3hw.hw.queue.Slice`): one cycle more, and no combinational path spans two blocks
  but one: the tracker answers whether the descriptor being written is named by a pending
  firing (``desc_query``, the register block's registered write, is registered in the
  tracker, whose distributed-RAM read and compare go into its ``desc_held`` register, which
  the DMA samples two cycles after it takes the write), so that such a write is refused
  (``desc_busy``).

Data does not flow through the engine: requests and packets carry addresses, lengths, tile
ids and tags; the DRAM and the network move the bytes.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from .addrmap import AddrMap
from .arbiter import Arbiter
from .csr import BusSignature, Csr
from .dma import Dma
from t3hw.spec.layouts import (load_layout, load_response_layout, mem_request_layout,
                      mem_response_layout, net_packet_layout, store_layout)
from .merge import Merge
from t3hw.spec.params import EngineParams, check_params
from .queue import Slice
from t3hw.spec.regmap import CAPTURES, RegisterMap
from .tracker import Tracker


__all__ = ["Engine"]


class Engine(wiring.Component):
    """One GPU's T3 engine.

    Parameters
    ----------
    params : EngineParams

    Members
    -------
    bus : In(BusSignature(RegisterMap(params).addr_width))
        The register bus (:class:`t3hw.hw.csr.Csr`).
    store : In(stream.Signature(store_layout))
        Producer (GPU core) stores.
    load : In(stream.Signature(load_layout))
        GPU reads (compute stream).
    load_response : Out(stream.Signature(load_response_layout))
        Their returns, from ``dram_response``.
    dram : Out(stream.Signature(mem_request_layout))
        Requests to the DRAM (``valid`` a register, the payload one AND-OR over registers).
    dram_response : In(stream.Signature(mem_response_layout))
        Read returns from the DRAM (DMA reads in request order).
    occupancy : In(occupancy_width)
        Requests in the DRAM's queue (for T3-MCA).
    net_tx : Out(stream.Signature(net_packet_layout))
        Packets to the network (``valid`` a register, the payload one AND-OR over
        registers): remote stores and DMA bursts.
    net_rx : In(stream.Signature(net_packet_layout))
        Packets from the network for this GPU (checked against ``DEVICE_ID`` and the region
        table; refused ones are consumed and reported).
    irq : Out(1)
        The interrupt: any sticky error bit whose enable bit is set (register block).
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = p = check_params(params, self)
        super().__init__({
            "bus":           In(BusSignature(RegisterMap(p).addr_width)),
            "store":         In(stream.Signature(store_layout(p))),
            "load":          In(stream.Signature(load_layout(p))),
            "load_response": Out(stream.Signature(load_response_layout(p))),
            "dram":          Out(stream.Signature(mem_request_layout(p))),
            "dram_response": In(stream.Signature(mem_response_layout(p))),
            "occupancy":     In(p.occupancy_width),
            "net_tx":        Out(stream.Signature(net_packet_layout(p))),
            "net_rx":        In(stream.Signature(net_packet_layout(p))),
            "irq":           Out(1),
        })

    @property
    def params(self):
        return self._p

    def elaborate(self, platform):
        p = self._p
        m = Module()
        m.submodules.csr     = csr     = Csr(p)
        m.submodules.addrmap = addrmap = AddrMap(p)
        m.submodules.arbiter = arbiter = Arbiter(p)
        m.submodules.tracker = tracker = Tracker(p)
        m.submodules.dma     = dma     = Dma(p)
        m.submodules.tx      = tx      = Merge(net_packet_layout(p), 2)

        # --- data path ------------------------------------------------------------------------
        # Every stream from one block to another passes a register slice, so that no
        # combinational path (a grant deciding a ready deciding a DMA address, ...) spans two
        # blocks: each block's timing is its own (docs/synthesis.md).
        def link(name, source, sink, fast=()):
            m.submodules[f"slice_{name}"] = cut = Slice(source.payload.shape(), fast=fast)
            connect(m, source, cut.i)
            connect(m, cut.o, sink)

        connect(m, flipped(self.store), addrmap.store)
        connect(m, flipped(self.net_rx), addrmap.rx)
        # The arbiter's decision reads a write's ``tracked`` bit (``track_hold``), and the
        # DMA's response check a read return's ``tag`` and ``error``: each from a register of
        # the slice's own, not through its payload multiplexer.
        link("store", addrmap.mem, arbiter.store, fast=("tracked",))
        link("remote", addrmap.rx_mem, arbiter.remote, fast=("tracked",))
        connect(m, flipped(self.load), arbiter.load)
        connect(m, arbiter.load_response, flipped(self.load_response))
        connect(m, arbiter.dram, flipped(self.dram))
        connect(m, flipped(self.dram_response), arbiter.response)
        m.d.comb += arbiter.occupancy.eq(self.occupancy)
        connect(m, arbiter.track, tracker.write)
        m.d.comb += arbiter.track_hold.eq(tracker.hold)
        connect(m, tracker.trigger, dma.trigger)
        link("dma_read", dma.read, arbiter.dma)
        link("dma_response", arbiter.dma_response, dma.response, fast=("tag", "error"))
        link("net_store", addrmap.net, tx.i[0])
        link("net_dma", dma.packet, tx.i[1])
        connect(m, tx.o, flipped(self.net_tx))

        # --- control: the register block --------------------------------------------------
        connect(m, flipped(self.bus), csr.bus)
        connect(m, csr.region_program, addrmap.program)
        connect(m, csr.dma_program, dma.program)
        # A descriptor named by a firing pending in the tracker cannot be rewritten.
        m.d.comb += [tracker.desc_query.eq(csr.dma_program.payload.index),
                     dma.desc_held.eq(tracker.desc_held)]
        connect(m, csr.tracker_program, tracker.program)
        connect(m, tracker.result, csr.tracker_result)
        m.d.comb += [addrmap.device_id.eq(csr.device_id), self.irq.eq(csr.irq)]
        m.d.comb += [                      # (not connect(): the staging payload has an init)
            arbiter.config.valid.eq(csr.arbiter_program.valid),
            arbiter.config.payload.eq(csr.arbiter_program.payload),
        ]
        for name, block in (("tracker", tracker), ("dma", dma), ("addrmap", addrmap),
                            ("arbiter", arbiter)):
            m.d.comb += [
                getattr(csr, f"{name}_errors").eq(block.errors),
                block.clear.eq(getattr(csr, f"{name}_clear")),
                getattr(csr, f"{name}_stats").eq(block.stats),
            ]
            if name in CAPTURES:            # the blocks with a first-error capture
                m.d.comb += getattr(csr, f"{name}_capture").eq(block.capture)
        m.d.comb += [
            csr.tracker_busy.eq(tracker.busy),
            csr.dma_busy.eq(dma.busy),
            csr.dma_idle.eq(dma.idle),
            csr.arbiter_status.eq(arbiter.status),
        ]
        return m
