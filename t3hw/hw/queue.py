# SPDX-License-Identifier: Apache-2.0
"""A first-word-fall-through queue whose full state does not cost a cycle.

Unlike :class:`amaranth.lib.fifo.SyncFIFO`, a full :class:`Queue` accepts a push in a cycle in
which its head is read, so a queue of any depth (1 included) passes one item per cycle while
its reader is ready.
"""

from amaranth import *
from amaranth.asserts import AnySeq
from amaranth.hdl import Assume, Cover
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out
from .formal import Spec, drive_inputs, past, stream_rules


__all__ = ["Queue", "Slice", "formal_spec", "slice_formal_spec"]


class Queue(wiring.Component):
    """FWFT queue with a push strobe in and a stream out.

    Parameters
    ----------
    shape : ShapeLike
        Shape of an item.
    depth : int
        Items held, at least 1.
    head : str
        Where the head item is kept: ``"register"`` (the default, below); ``"select"``
        (``depth`` 2 only): both items in registers, ``o.payload`` the one a read pointer
        selects, so that a pop toggles one flip-flop instead of enabling a register as wide
        as an item; ``"memory"``: every item in a memory of ``depth`` entries with an
        asynchronous read port, ``o.payload`` the entry a read pointer addresses (a pop
        moves the pointer, and enables no register as wide as an item).

    Members
    -------
    push : In(1)
        Write ``data`` this cycle if ``accept`` is high (otherwise the item is not taken).
    data : In(shape)
        Item to push.
    accept : Out(1)
        The queue takes a push this cycle: it is not full, or its head leaves this cycle.
        Depends combinationally on ``o.ready``.
    o : Out(stream.Signature(shape))
        Head of the queue; ``o.valid`` is a register output (not combinational on ``ready``).
    level : Out(range(depth + 1))
        Items held.
    full : Out(1)
        ``level == depth``, a register.

    Storage, ``head="register"``: the head item in a register (``o.payload`` and ``o.valid``
    come from flip-flops), the ``depth - 1`` items behind it in a memory of ``depth`` entries
    (one always free, written in every cycle) with an asynchronous read port (LUT RAM on
    FPGAs; a register when ``depth`` is 2). ``head="select"``: two
    registers written in turn by the pushes and read in turn by the pops (``o.payload`` is
    a 2:1 multiplexer of them by a flip-flop). ``head="memory"``: a ring of ``depth`` entries
    in a memory with an asynchronous read port (LUT RAM), written at a write pointer and read
    at a read pointer (``o.payload`` is the read data; a full queue that pops and pushes in
    the same cycle reads the leaving item and writes the new one over it at the clock edge).
    Every way, an item pushed in cycle t is valid at ``o`` in cycle t + 1, and the cycle
    behaviour is the same.
    """

    def __init__(self, shape, *, depth, head="register"):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be a positive integer, not {depth!r}")
        if head not in ("register", "select", "memory"):
            raise ValueError(f"head must be 'register', 'select' or 'memory', not {head!r}")
        if head == "select" and depth != 2:
            raise ValueError(f"head='select' needs depth 2, not {depth!r}")
        self._shape, self._depth, self._head = shape, depth, head
        super().__init__({
            "push":   In(1),
            "data":   In(shape),
            "accept": Out(1),
            "o":      Out(stream.Signature(shape)),
            "level":  Out(range(depth + 1)),
            "full":   Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self._depth
        # ``o.valid`` ("not empty"), ``full`` and ``waiting`` (more than one item: some wait
        # behind the head) are registers, kept equal to compares of ``level`` (the formal
        # properties assert it), so that the pop and the head's enable start from flip-flops,
        # not from a compare of the level counter.
        full = self.full
        waiting = Signal(name="waiting") if depth > 1 else C(0)
        pop = self.o.valid & self.o.ready
        m.d.comb += self.accept.eq(~full | pop)
        do_push = self.push & self.accept
        # Each flag's next value is a compare of the current ``level`` (beside the control,
        # from registers) selected by whether the level goes up or down: no adder on the
        # path from ``push`` and ``o.ready``.
        up = do_push & ~pop
        down = pop & ~do_push
        level = self.level
        m.d.sync += [
            level.eq(level + do_push - pop),
            self.o.valid.eq(Mux(up, 1, Mux(down, waiting, self.o.valid))),
            full.eq(Mux(up, level == depth - 1, ~down & full)),
        ]
        if depth > 1:
            m.d.sync += waiting.eq(Mux(up, level >= 1, Mux(down, level >= 3, waiting)))

        if self._head == "select":
            # Two registers, written in turn (``wr``) and read in turn (``rd``): the pop
            # reaches one flip-flop, the push (from the writer's side) the enable of one
            # register.
            entries = [Signal(self._shape, reset_less=True, name=f"entry{i}") for i in (0, 1)]
            wr, rd = Signal(), Signal()
            with m.If(do_push):
                m.d.sync += wr.eq(~wr)
                with m.If(wr):
                    m.d.sync += entries[1].eq(self.data)
                with m.Else():
                    m.d.sync += entries[0].eq(self.data)
            with m.If(pop):
                m.d.sync += rd.eq(~rd)
            m.d.comb += self.o.payload.eq(Mux(rd, entries[1], entries[0]))
            return m
        if self._head == "memory":
            m.submodules.storage = storage = memory.Memory(shape=self._shape, depth=depth,
                                                           init=[])
            wr = storage.write_port()
            rd = storage.read_port(domain="comb")
            head = Signal(range(depth))
            tail = Signal(range(depth))
            m.d.comb += [wr.addr.eq(tail), wr.data.eq(self.data), wr.en.eq(do_push),
                         rd.addr.eq(head), self.o.payload.eq(rd.data)]
            with m.If(do_push):
                m.d.sync += tail.eq(Mux(tail == depth - 1, 0, tail + 1))
            with m.If(pop):
                m.d.sync += head.eq(Mux(head == depth - 1, 0, head + 1))
            return m
        # The head is a register (``o.payload``); the items behind it wait in a memory (one
        # entry more than can wait) with an asynchronous read port. An item pushed while the
        # head register is empty or leaving, and nothing waits, goes straight into it;
        # otherwise it waits. When the head leaves, the oldest waiting item moves into the
        # head register. So the head's payload comes from a flip-flop, not through a RAM read,
        # with the same cycle behaviour as a queue read at its head (latency 1, one item
        # per cycle, a full queue takes a push while its head leaves).
        head_reg = Signal(self._shape, reset_less=True)
        m.d.comb += self.o.payload.eq(head_reg)
        direct = do_push & (~self.o.valid | (pop & ~waiting))
        # The head register loads on every pop and on a push into an empty queue, from the
        # oldest waiting item if one waits, else from ``data``: its enable is two gates over
        # the handshake and its select a register (``waiting``). A pop with nothing waiting
        # and nothing pushed loads ``data`` into an empty queue's head, which no one reads.
        load = pop | (self.push & ~self.o.valid)
        if depth == 1:
            with m.If(load):
                m.d.sync += head_reg.eq(self.data)
        if depth > 1:
            behind = depth - 1
            enqueue = do_push & ~direct
            dequeue = pop & waiting
            if behind == 1:
                slot = Signal(self._shape, reset_less=True)
                with m.If(enqueue):
                    m.d.sync += slot.eq(self.data)
                oldest = slot
            else:
                # One entry more than can wait, so that the entry at ``tail`` is always free:
                # it is written with ``data`` in every cycle, and an enqueue only moves
                # ``tail`` past it. So the handshake reaches the pointer, not the write enable
                # of every RAM cell.
                slots = behind + 1
                m.submodules.storage = storage = memory.Memory(shape=self._shape, depth=slots,
                                                               init=[])
                wr = storage.write_port()
                head = Signal(range(slots))
                tail = Signal(range(slots))
                rd = storage.read_port(domain="comb")
                m.d.comb += [wr.addr.eq(tail), wr.data.eq(self.data), wr.en.eq(1),
                             rd.addr.eq(head)]
                with m.If(enqueue):
                    m.d.sync += tail.eq(Mux(tail == slots - 1, 0, tail + 1))
                with m.If(dequeue):
                    m.d.sync += head.eq(Mux(head == slots - 1, 0, head + 1))
                oldest = rd.data
            with m.If(load):
                m.d.sync += head_reg.eq(Mux(waiting, oldest, self.data))
        return m

    # --- formal properties (docs/formal.md); never part of the generated Verilog -----------

    def properties(self, m):
        """Add this queue's formal properties to ``m``, a spec module that contains the queue.

        They hold whatever the queue's inputs do (no assumption), so a spec can add them for
        any queue it reaches: the queue alone (:func:`formal_spec`), the tracker's trigger
        queue, the DMA's ready and pending queues.

        * ``level`` never exceeds ``depth``; it changes by exactly the accepted pushes and the
          pops; ``accept`` is "not full, or the head leaves"; ``o.valid`` is "not empty".
        * ``o`` obeys the stream rules: a stalled head keeps ``valid`` and its payload.
        * It is a FIFO: any one accepted item (the solver picks which) reaches the head when
          exactly the items pushed before it have left, with its data unchanged, and leaves
          once.
        """
        depth = self._depth
        pop = self.o.valid & self.o.ready
        do_push = self.push & self.accept
        level_was = past(m, self.level)
        m.d.comb += [
            Assert(self.level <= depth, "queue: level above depth"),
            Assert(self.o.valid == (self.level != 0), "queue: o.valid is not level != 0"),
            Assert(self.full == (self.level == depth), "queue: full is not level == depth"),
            Assert(self.accept == ((self.level != depth) | pop),
                   "queue: accept is not (not full, or popping)"),
            Assert(self.level == level_was + past(m, do_push) - past(m, pop),
                   "queue: level is not pushes - pops"),
        ]
        stream_rules(m, self.o, Assert, "queue.o")

        # One tracked item: `ahead` items were pushed before it and have not left yet.
        held  = Signal(name="queue_held")
        ahead = Signal(range(depth), name="queue_ahead")
        item  = Signal(self._shape, name="queue_item")
        with m.If(held & pop):
            m.d.sync += [held.eq(ahead != 0), ahead.eq(ahead - 1)]
        with m.If(~held & do_push & AnySeq(1)):
            m.d.sync += [held.eq(1), item.eq(self.data), ahead.eq(self.level - pop)]
        with m.If(held):
            m.d.comb += Assert(ahead < self.level, "queue: a held item is not inside")
            with m.If(ahead == 0):
                m.d.comb += Assert(Value.cast(self.o.payload) == Value.cast(item),
                                   "queue: the head is not the oldest item")


def formal_spec(*, depth, width=2, head="register"):
    """The formal spec top of one :class:`Queue` of ``width``-bit items (its ``head`` mode):
    every input free in every cycle, :meth:`Queue.properties` asserted, and covers that it
    fills, passes an item through while full, and drains."""

    def body(m, platform):
        m.submodules.dut = dut = Queue(width, depth=depth, head=head)
        drive_inputs(m, dut)
        dut.properties(m)
        full = dut.level == depth
        was_full = Signal()
        with m.If(full):
            m.d.sync += was_full.eq(1)
        m.d.comb += [
            Cover(full & dut.push & dut.o.ready),
            Cover(was_full & (dut.level == 0)),
        ]
    return Spec(body)


class Slice(wiring.Component):
    """A register slice (skid buffer) for a stream: ``i`` in, the same items out on ``o``, in
    order, with ``i.ready``, ``o.valid`` and ``o.payload`` all driven from registers, so that
    no combinational path crosses it, forward or back. The engine puts one on each stream
    between two of its blocks, for timing.

    Parameters
    ----------
    shape : ShapeLike
        Shape of an item.

    Members
    -------
    i : In(stream.Signature(shape))
        Ready while the slice holds fewer than 2 items (``level``, a register).
    o : Out(stream.Signature(shape))
        The head item.

    Latency 1 cycle; throughput one item per cycle while ``o.ready`` is high (the second
    entry absorbs the cycle in which ``o.ready`` falls). A :class:`Queue` of depth 2 inside,
    with ``head="select"``: ``o.ready`` (the reader's decision, the head of every
    ready-to-pop path in the engine) drives the read pointer and the level flags, a handful
    of flip-flops, not the enable of a payload-wide head register; ``o.payload`` is one 2:1
    multiplexer level behind the two registers.
    """

    def __init__(self, shape):
        self._shape = shape
        super().__init__({
            "i": In(stream.Signature(shape)),
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.queue = queue = Queue(self._shape, depth=2, head="select")
        m.d.comb += [
            self.i.ready.eq(~queue.full),
            queue.push.eq(self.i.valid & self.i.ready),
            queue.data.eq(self.i.payload),
        ]
        wiring.connect(m, queue.o, wiring.flipped(self.o))
        if platform == "formal":
            self.formal_view = queue
        return m


def slice_formal_spec(*, width=2):
    """The formal spec top of one :class:`Slice` of ``width``-bit items: inputs free, ``i``
    assumed to obey the stream rules; asserted: every item taken on ``i`` is accepted by the
    queue inside (so none is lost), ``i.ready`` is high whenever the slice is not full, and
    the queue's :meth:`Queue.properties` (``o`` obeys the stream rules, first in first out,
    at most 2 items). Covers: an item passes every cycle for three cycles; the slice fills."""

    def body(m, platform):
        dut = Slice(width)
        m.submodules.dut = Fragment.get(dut, platform)
        queue = dut.formal_view
        drive_inputs(m, dut)
        stream_rules(m, dut.i, Assume, "i")
        queue.properties(m)
        take = dut.i.valid & dut.i.ready
        m.d.comb += [
            Assert(~take | queue.accept, "slice: an item taken on i was not stored"),
            Assert(dut.i.ready == (queue.level != 2), "slice: i.ready is not 'not full'"),
        ]
        flow = dut.o.valid & dut.o.ready & take
        m.d.comb += [
            Cover(flow & past(m, flow, name="flow1") & past(m, past(m, flow, name="flow2a"),
                                                             name="flow2")),
            Cover(queue.level == 2),
        ]
    return Spec(body)
