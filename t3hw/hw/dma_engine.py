# SPDX-License-Identifier: Apache-2.0
"""The DMA's backend (:class:`DmaEngine`): walks each descriptor into burst-sized comm-stream
reads and turns each returned read into one network packet; a bad return aborts its
descriptor. The block that wires it to the frontend is :class:`t3hw.hw.dma.Dma`.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from t3hw.spec.layouts import (dma_capture_layout, dma_descriptor_layout, dma_program_layout,
                               net_packet_layout, read_request_layout, read_response_layout)
from t3hw.spec.params import EngineParams, check_params
from .queue import Queue


__all__ = ["DmaEngine"]


class DmaEngine(wiring.Component):
    """Walks descriptors into burst reads and turns each returned read into a packet.

    Parameters
    ----------
    params : EngineParams
        Uses ``burst_bytes``, ``max_outstanding`` and the address and descriptor widths.

    Members
    -------
    descriptor : In(stream.Signature(dma_program_layout))
        The descriptor to run, with its index (its ``valid`` field is not looked at). Taken
        into a register of its own, the next descriptor, whenever that is empty (``ready``
        is a register); the walker starts the next descriptor when it is idle or issuing
        the last burst of the current one.
    read : Out(stream.Signature(read_request_layout))
        Comm-stream reads: address ``src + r * pitch + c`` for row ``r`` and row offset ``c``
        (multiples of ``burst_bytes``), ``bytes = min(burst_bytes, row_bytes - c)``, ``tag``
        counting requests modulo ``2**read_tag_width``. ``valid`` is a register.
    response : In(stream.Signature(read_response_layout))
        Read returns, in request order. Always ready: every read is issued with a place
        reserved for its packet in the packet queue, so the engine never holds the memory's
        read returns (which the GPU's loads share) while the network holds its packets. A
        response with no read outstanding is dropped (``bad_response``). One with its
        ``error`` bit set (``read_error``) or a tag other than the oldest outstanding read's
        (``bad_response``) aborts that read's descriptor (``aborted``), unless it is aborted
        already.
    packet : Out(stream.Signature(net_packet_layout))
        One packet per good return of a read of a descriptor not aborted, in the order of
        the returns: ``device``, ``addr = dst + r * pitch + c``, ``kind = op``, ``tile`` of
        the descriptor, and the read's ``bytes``. The head of the packet queue
        (``max_outstanding`` deep, a register and LUT RAM as ``pending``); ``valid`` is a
        register.
    bad_response, read_error, aborted : Out(1)
        Events of the response taken this cycle.
    detail : Out(dma_capture_layout)
        Details of this cycle's response events: the oldest outstanding read's descriptor
        index, that descriptor's tile and the read's address (0 with no read outstanding).
    idle : Out(1)
        No descriptor in progress or taken, no read requested or outstanding, no packet
        held.

    **Abort.** Each read carries, in the queue of outstanding reads, a *run* number (the
    count of descriptors started, modulo ``2**(read_tag_width + 1)``, more than the runs that
    can have reads outstanding). A bad response to a read of run R in cycle t marks R
    aborted: it makes no packet, and the responses to R's other outstanding reads are taken
    without packets (R's packets of earlier good returns, already queued, still leave); if
    the walker is still on R in t + 1 it stops there (so a read of R loaded in cycle t still
    goes out, and its response is taken without a packet), and starts the next descriptor
    from t + 2. The mark is cleared by the first response of a later run
    taken with no error, which then makes its packet as usual.

    Latency: the first read of a descriptor is valid the cycle after the walker starts it,
    which is the cycle after it is taken from ``descriptor`` when the walker is idle; a
    packet is valid the cycle after its response (behind the packets queued before it).
    Throughput: one read per cycle (also across descriptors, while the next one has been
    taken), as long as fewer than ``max_outstanding`` reads and queued packets
    are held: a read holds a place from the cycle it is loaded into ``read`` until its
    packet leaves on ``packet`` (or, for a response that makes no packet, until the
    response), and a place freed while all ``max_outstanding`` are held counts from the
    cycle after; one packet per cycle. Back-pressure on ``read`` holds the walk;
    back-pressure on ``packet`` fills the packet queue, and then holds the walk; nothing is
    lost.
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        super().__init__({
            "descriptor":   In(stream.Signature(dma_program_layout(params))),
            "read":         Out(stream.Signature(read_request_layout(params))),
            "response":     In(stream.Signature(read_response_layout(params))),
            "packet":       Out(stream.Signature(net_packet_layout(params))),
            "bad_response": Out(1),
            "read_error":   Out(1),
            "aborted":      Out(1),
            "detail":       Out(dma_capture_layout(params)),
            "idle":         Out(1),
        })

    def elaborate(self, platform):
        # Two halves meet at ``pending``, the queue of outstanding reads: the walker
        # (``_walk``) takes descriptors, loads each burst into the ``read`` register and
        # pushes its packet fields, tag, run, index and source address; the response side
        # (``_respond``) pops the head for each response into the ``packet`` register, or
        # drops it when its run is aborted. They share the abort mark (``kill``).
        p = self._p
        m = Module()
        run_width = p.read_tag_width + 1
        meta_layout = data.StructLayout({"packet": net_packet_layout(p),
                                         "tag":    p.read_tag_width,
                                         "run":    run_width,
                                         "index":  p.cmd_width,
                                         "src":    p.addr_width})

        # Every read from the cycle it is loaded into the `read` register until its response
        # holds one entry of `pending` (its head is the packet of the next response), and
        # then, if it makes a packet, one of `packets` until the packet leaves: `held`
        # counts both, and the walk stops at `max_outstanding` (`at_limit`, a register), so
        # that a response never waits for the network.
        m.submodules.pending = pending = Queue(meta_layout, depth=p.max_outstanding)
        m.submodules.packets = packets = Queue(net_packet_layout(p), depth=p.max_outstanding)
        held = Signal(range(p.max_outstanding + 1))
        at_limit = Signal()
        # ``match``: ``kill.run == run``, a register of its own (its next value the compare of
        # the two registers' next values), so that the walker's ``stop`` is one gate.
        kill = SimpleNamespace(valid=Signal(), run=Signal(run_width, reset_less=True),
                               match=Signal(init=1))
        active, nxt_valid, run, stop, start, issue = self._walk(m, pending, meta_layout, kill,
                                                                at_limit)
        send, abort, dead, live = self._respond(m, pending, packets, active, nxt_valid, kill)
        # places: +1 for a read issued, -1 for a packet leaving, -1 for a response that
        # makes no packet (dropped with no read outstanding: no place)
        got = pending.o.valid & pending.o.ready
        left = packets.o.valid & packets.o.ready
        # The next count and limit flag are multiplexers of sums and compares of ``held``
        # alone, selected by this cycle's issue, packet and dropped response, so that the
        # handshakes (a response's tag check among them) reach no adder.
        drop = got & ~send
        up, down2 = issue & ~left & ~drop, ~issue & left & drop
        down1 = (issue ^ left ^ drop) & ~up
        top = p.max_outstanding
        m.d.sync += [
            held.eq(Mux(up, held + 1, Mux(down2, held - 2, Mux(down1, held - 1, held)))),
            at_limit.eq(Mux(up, held + 1 == top, ~down1 & ~down2 & (held == top))),
        ]
        m.d.sync += kill.match.eq(Mux(live, pending.o.payload.run, kill.run)
                                  == Mux(start, run + 1, run))
        if platform == "formal":
            # Formal only (never in rtl/): what formal_spec() checks inside.
            self.formal_view = SimpleNamespace(pending=pending, packets=packets, held=held,
                                               kill=kill, run=run, active=active, stop=stop,
                                               send=send, abort=abort, dead=dead, start=start)
        return m

    def _walk(self, m, pending, meta_layout, kill, at_limit):
        """The walker: its state, the ``read`` register and the push into ``pending`` of each
        burst, and the take of the next ``descriptor``. Returns ``active`` (a descriptor is
        in progress), ``nxt_valid`` (the next one is taken), its run number, ``stop`` (it
        stops on an abort), ``start`` (it starts a descriptor this cycle) and ``issue`` (it
        loads a read)."""
        p = self._p

        # --- walker state ------------------------------------------------------------------
        active    = Signal()
        cur       = Signal(dma_descriptor_layout(p), reset_less=True)
        index     = Signal(p.cmd_width, reset_less=True)
        run       = Signal(p.read_tag_width + 1)
        # The burst's addresses, ``src + r * pitch + c`` and ``dst + r * pitch + c``, kept as
        # registers and stepped with the walk, so that no adder lies between the walker's
        # state and the queue of outstanding reads: by ``burst_bytes`` inside a row, and
        # from a row's last burst to the next row's first by ``row_step = pitch - (row_bytes
        # - 1) // burst_bytes * burst_bytes`` (the descriptor's, computed as it is taken), so
        # that no row start is kept beside them: ``issue`` enables as few registers as it
        # can.
        src_at    = Signal(p.addr_width, reset_less=True)
        dst_at    = Signal(p.addr_width, reset_less=True)
        row_step  = Signal(p.addr_width, reset_less=True)
        rows_left = Signal(p.rows_width, reset_less=True)
        tag       = Signal(p.read_tag_width)

        # The walk's decisions are registers, updated with the state they derive from, so
        # that no subtract or compare lies between the walker and the descriptor queue's
        # ready: ``remaining`` = row_bytes - col, ``row_end`` = remaining <= burst,
        # ``one_row`` = rows_left == 1, ``short_row`` = row_bytes <= burst.
        remaining = Signal(p.row_bytes_width, reset_less=True)
        row_end   = Signal(reset_less=True)     # this burst is the last (maybe short) of its row
        one_row   = Signal(reset_less=True)
        short_row = Signal(reset_less=True)
        # ``near_end`` = remaining <= 2 burst (the next burst ends the row), ``row_near`` the
        # same for a whole row, so that the step's select is a flip-flop, not a compare.
        near_end  = Signal(reset_less=True)
        row_near  = Signal(reset_less=True)
        nbytes    = Signal(p.burst_width)
        last      = Signal()                    # ...and of the descriptor
        m.d.comb += [
            nbytes.eq(Mux(row_end, remaining, p.burst_bytes)),
            last.eq(row_end & one_row),
        ]

        req = self.read
        stop  = Signal()                   # this descriptor was aborted: walk no further
        issue = Signal()                   # load the next burst into the `read` register
        # ``issue`` enables every register of the walk (a few hundred bits), so it starts
        # from flip-flops only: ``at_limit`` (a register: every place held by a read or a
        # packet), not the handshakes of the same cycle that free places. A place freed
        # while all are held counts from the cycle after.
        m.d.comb += [
            stop.eq(active & kill.valid & kill.match),
            issue.eq(active & ~stop & (~req.valid | req.ready) & ~at_limit),
        ]

        with m.If(req.ready):
            m.d.sync += req.valid.eq(0)
        meta = Signal(meta_layout)
        m.d.comb += [
            meta.packet.device.eq(cur.device),
            meta.packet.addr.eq(dst_at),
            meta.packet.kind.eq(cur.op),
            meta.packet.tile.eq(cur.tile),
            meta.packet.bytes.eq(nbytes),
            meta.tag.eq(tag),
            meta.run.eq(run),
            meta.index.eq(index),
            meta.src.eq(src_at),
            pending.data.eq(meta),
            pending.push.eq(issue),
        ]
        # The read register's payload loads in every cycle its slot is free (a flip-flop
        # and the reader's ``ready``), not on ``issue``: without an issue ``valid`` stays
        # low and no one reads it.
        with m.If(~req.valid | req.ready):
            m.d.sync += [
                req.payload.addr.eq(meta.src),
                req.payload.bytes.eq(nbytes),
                req.payload.tag.eq(tag),
            ]
        # ``step``, the addresses' next step (``row_step`` at a row's last burst, else
        # ``burst_bytes``), is a register updated with ``row_end``, so that the adders'
        # operand is a flip-flop, not a multiplexer that ``row_end`` selects for every bit.
        step = Signal(p.addr_width, reset_less=True)

        def step_for(ends_row, row_step_value):
            return Mux(ends_row, row_step_value, p.burst_bytes)

        with m.If(issue):
            m.d.sync += [
                req.valid.eq(1),
                tag.eq(tag + 1),
                src_at.eq(src_at + step),
                dst_at.eq(dst_at + step),
            ]
            with m.If(row_end):
                m.d.sync += [
                    rows_left.eq(rows_left - 1),
                    remaining.eq(cur.row_bytes),
                    near_end.eq(row_near),
                    row_end.eq(short_row),
                    step.eq(step_for(short_row, row_step)),
                    one_row.eq(rows_left == 2),
                ]
            with m.Else():
                m.d.sync += [
                    remaining.eq(remaining - p.burst_bytes),
                    near_end.eq(remaining <= 3 * p.burst_bytes),
                    row_end.eq(near_end),
                    step.eq(step_for(near_end, row_step)),
                ]
            with m.If(last):
                m.d.sync += active.eq(0)
        with m.If(stop):
            m.d.sync += active.eq(0)

        # The next descriptor waits in a register of its own (``nxt``), taken from
        # ``descriptor`` whenever that is empty, so that ``descriptor.ready`` is a register
        # and the take (which enables the frontend's fetch state and use counter) does not
        # hang off the walk's decision. Its compares are registered with it. The walker
        # starts it when idle (``~active``, a register): one cycle without a read between two
        # descriptors, so that the start, which loads every register of the walk, is one
        # gate over flip-flops and not behind the issue decision of the last burst.
        desc = self.descriptor
        nxt = Signal(dma_program_layout(p), reset_less=True)
        nxt_valid = Signal()
        nxt_short = Signal(reset_less=True)         # row_bytes <= burst
        nxt_near = Signal(reset_less=True)          # row_bytes <= 2 burst
        nxt_one_row = Signal(reset_less=True)       # rows == 1
        nxt_step = Signal(p.addr_width, reset_less=True)
        m.d.comb += desc.ready.eq(~nxt_valid)
        d = desc.payload
        shift = exact_log2(p.burst_bytes)       # a power of two (check_params)
        with m.If(desc.valid & ~nxt_valid):
            m.d.sync += [nxt.eq(d), nxt_valid.eq(1),
                         nxt_short.eq(d.row_bytes <= p.burst_bytes),
                         nxt_near.eq(d.row_bytes <= 2 * p.burst_bytes),
                         nxt_one_row.eq(d.rows == 1),
                         nxt_step.eq(d.pitch - (((d.row_bytes - 1) >> shift) << shift))]
        start = Signal()
        m.d.comb += start.eq(nxt_valid & ~active)
        with m.If(start):
            m.d.sync += [
                nxt_valid.eq(0),
                active.eq(1),
                *(cur[name].eq(nxt[name]) for name in dma_descriptor_layout(p).members),
                index.eq(nxt.index),
                run.eq(run + 1),
                src_at.eq(nxt.src),
                dst_at.eq(nxt.dst),
                row_step.eq(nxt_step),
                rows_left.eq(nxt.rows),
                remaining.eq(nxt.row_bytes),
                near_end.eq(nxt_near),
                row_near.eq(nxt_near),
                row_end.eq(nxt_short),
                step.eq(step_for(nxt_short, nxt_step)),
                short_row.eq(nxt_short),
                one_row.eq(nxt_one_row),
            ]
        return active, nxt_valid, run, stop, start, issue

    def _respond(self, m, pending, packets, active, nxt_valid, kill):
        """The response side: each response pops ``pending``'s head into the packet queue
        (whose head is ``packet``), or drops it (aborted run, bad response); the abort mark,
        the events, ``detail`` and ``idle``. Returns ``send``, ``abort``, ``dead`` and
        ``live`` (this cycle's response makes a packet, aborts its run, belongs to an
        aborted run, is taken for a run not aborted: it sets ``kill``)."""
        pkt  = self.packet
        resp = self.response
        m.d.comb += resp.ready.eq(1)
        take_resp = resp.valid
        m.d.comb += pending.o.ready.eq(take_resp)
        head = pending.o.payload
        got  = take_resp & pending.o.valid
        bad  = resp.payload.error | (head.tag != resp.payload.tag)
        dead, send, abort = Signal(), Signal(), Signal()
        m.d.comb += [
            dead.eq(kill.valid & (head.run == kill.run)),
            send.eq(got & ~dead & ~bad),
            abort.eq(got & ~dead & bad),
        ]
        # Never full when a response makes a packet: its read held a place since its issue.
        m.d.comb += [packets.data.eq(head.packet), packets.push.eq(send)]
        wiring.connect(m, packets.o, wiring.flipped(pkt))
        # A response of a live run sets or clears the mark; one of the aborted run leaves it.
        with m.If(got & ~dead):
            m.d.sync += [kill.valid.eq(bad), kill.run.eq(head.run)]
        m.d.comb += [
            self.bad_response.eq(take_resp & (~pending.o.valid
                                              | (head.tag != resp.payload.tag))),
            self.read_error.eq(got & resp.payload.error),
            self.aborted.eq(abort),
            self.idle.eq(~active & ~nxt_valid & ~pending.o.valid & ~packets.o.valid),
        ]
        with m.If(pending.o.valid):
            m.d.comb += [self.detail.index.eq(head.index), self.detail.tile.eq(head.packet.tile),
                         self.detail.addr.eq(head.src)]
        return send, abort, dead, got & ~dead
