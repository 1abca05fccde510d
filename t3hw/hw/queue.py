# SPDX-License-Identifier: Apache-2.0
"""A first-word-fall-through queue whose full state does not cost a cycle.

Unlike :class:`amaranth.lib.fifo.SyncFIFO`, a full :class:`Queue` accepts a push in a cycle in
which its head is read, so a queue of any depth (1 included) passes one item per cycle while
its reader is ready.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.asserts import AnySeq
from amaranth.hdl import Assume, Cover
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out
from t3hw.spec.layouts import rd_collision_attrs
from .formal import Spec, drive_inputs, past, stream_rules


__all__ = ["HEADS", "BLOCK_MIN_DEPTH", "Queue", "Slice", "formal_spec", "slice_formal_spec"]

#: Where a :class:`Queue` keeps its items (its ``head`` parameter).
HEADS = ("register", "select", "memory", "block")

#: Fewest items a ``head="block"`` queue holds: its three front registers and one more.
BLOCK_MIN_DEPTH = 4


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
        as an item; ``"memory"``: every item in a memory of ``depth + 1`` entries with an
        asynchronous read port, ``o.payload`` the entry a read pointer addresses (a pop
        moves the pointer, and enables no register as wide as an item); ``"block"``
        (``depth`` 4 or more): the first items in three registers, the rest in a memory
        with a synchronous read port whose data is registered before use (block RAM with
        its output register on FPGAs), so that neither the depth nor the RAM's
        clock-to-out is on any path but the RAM's own.

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
    registers, the one at a write pointer written whenever the queue is not full (a push
    moves the pointer), read in turn by the pops (``o.payload`` is a 2:1 multiplexer of them
    by a flip-flop). ``head="memory"``: a ring of ``depth + 1`` entries
    in a memory with an asynchronous read port (LUT RAM), read at a read pointer
    (``o.payload`` is the read data) and written at a write pointer in every cycle (the entry
    there is always free; a push moves the pointer).
    ``head="block"``: queue positions 0 to 2 in a *front* of three registers (``o.payload`` is
    the first), positions 3 and up in a memory of ``depth`` entries, written at a write
    pointer in every cycle (the entry there is always free, so the handshake reaches the
    pointer, not the RAM's write enable) and read at a read pointer in every cycle into
    ``rd_q``, with no logic between (the synthesis flow moves that register into the block
    RAM's output register). A push goes to the front at position ``level - pop`` when that
    is below 3, else to the memory. A pop with 4 or more items held *issues* the item at
    position 3 (the read pointer moves on): it is in ``rd_q`` two cycles later and joins the
    front then, at the position it has reached (2, less the pops of those two cycles), so
    the head is always a register. The read pointer meets the write pointer only when the
    memory is empty, when no read is issued, and an item is read at the earliest in the
    cycle after it was written.

    Every way, an item pushed in cycle t is valid at ``o`` in cycle t + 1, and the cycle
    behaviour is the same.
    """

    def __init__(self, shape, *, depth, head="register"):
        error = None
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            error = f"depth must be an integer in [1, inf), not {depth!r}"
        elif head not in HEADS:
            error = f"head must be one of {HEADS}, not {head!r}"
        elif head == "select" and depth != 2:
            error = f"head='select' needs depth 2, not {depth!r}"
        elif head == "block" and depth < BLOCK_MIN_DEPTH:
            error = (f"head='block' needs depth in [{BLOCK_MIN_DEPTH}, inf) (three front "
                     f"registers and a memory), not {depth!r}")
        if error:
            self._MustUse__silence = True
            raise ValueError(error)
        self._shape, self._depth, self._head = shape, depth, head
        if head == "block":
            # The block variant's state, made here so that :meth:`properties` can reach it:
            # ``level >= 3`` and ``level >= 4`` (registers), reads issued one and two cycles
            # ago, and whether a pop followed the issue (:meth:`_block`).
            self._block_state = SimpleNamespace(
                ge3=Signal(name="ge3"), ge4=Signal(name="ge4"), issued1=Signal(name="issued1"),
                issued2=Signal(name="issued2"), late=Signal(name="late"))
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
        # ``level`` too: its next value is ``level`` plus or minus one (adders over the
        # register alone) selected by ``up`` and ``down``, so that the handshake reaches a
        # multiplexer, not the carry chain.
        m.d.sync += [
            level.eq(Mux(up, level + 1, Mux(down, level - 1, level))),
            self.o.valid.eq(Mux(up, 1, Mux(down, waiting, self.o.valid))),
            full.eq(Mux(up, level == depth - 1, ~down & full)),
        ]
        if depth > 1:
            m.d.sync += waiting.eq(Mux(up, level >= 1, Mux(down, level >= 3, waiting)))

        if self._head == "block":
            self._block(m, do_push, pop, waiting)
            return m
        if self._head == "select":
            self._select(m, do_push, pop, full)
            return m
        if self._head == "memory":
            self._memory(m, do_push, pop)
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
        # The head register loads on every pop and in every cycle the queue is empty, from
        # the oldest waiting item if one waits, else from ``data``: its enable is one gate
        # over flip-flops (``o.valid`` and the reader's ``ready``), not the writer's
        # handshake, and its select a register (``waiting``). An empty queue's head takes
        # ``data`` whether or not it is pushed; ``o.valid`` says whether it was, and no one
        # reads the head of an empty queue.
        load = pop | ~self.o.valid
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

    def _select(self, m, do_push, pop, full):
        """``head="select"``: two registers, written at ``wr`` and read in turn (``rd``): the
        pop reaches one flip-flop, the push the write pointer."""
        entries = [Signal(self._shape, reset_less=True, name=f"entry{i}") for i in (0, 1)]
        wr, rd = Signal(), Signal()
        with m.If(do_push):
            m.d.sync += wr.eq(~wr)
        # The entry at ``wr`` is free whenever the queue is not full, so it takes ``data``
        # in every such cycle, pushed or not (``wr`` moves only on a push): its enable is
        # ``full`` and ``wr``, registers, and the writer's ``push`` reaches ``wr`` and the
        # flags only (in a :class:`Slice`, whose writer never pushes while it is full, the
        # second term is constant 0). A full queue takes a push only while its head leaves,
        # into the head's entry, which ``wr`` then names.
        with m.If(~full | do_push):
            with m.If(wr):
                m.d.sync += entries[1].eq(self.data)
            with m.Else():
                m.d.sync += entries[0].eq(self.data)
        with m.If(pop):
            m.d.sync += rd.eq(~rd)
        m.d.comb += self.o.payload.eq(Mux(rd, entries[1], entries[0]))

    def _memory(self, m, do_push, pop):
        """``head="memory"``: every item in a ring of ``depth + 1`` entries of LUT RAM."""
        depth = self._depth
        # One entry more than the queue holds, so that the entry at ``tail`` is always
        # free: it is written with ``data`` in every cycle, and a push only moves ``tail``
        # past it. So the handshake reaches the pointer, not the write enable of every
        # RAM cell.
        slots = depth + 1
        m.submodules.storage = storage = memory.Memory(shape=self._shape, depth=slots,
                                                       init=[])
        wr = storage.write_port()
        rd = storage.read_port(domain="comb")
        head = Signal(range(slots))
        tail = Signal(range(slots))
        m.d.comb += [wr.addr.eq(tail), wr.data.eq(self.data), wr.en.eq(1),
                     rd.addr.eq(head), self.o.payload.eq(rd.data)]
        with m.If(do_push):
            m.d.sync += tail.eq(Mux(tail == slots - 1, 0, tail + 1))
        with m.If(pop):
            m.d.sync += head.eq(Mux(head == slots - 1, 0, head + 1))

    def _block(self, m, do_push, pop, waiting):
        """``head="block"``: queue positions 0 to 2 in the front registers (or on their way
        there from the memory), positions 3 and up in a memory read synchronously into
        ``rd_q`` (class docstring)."""
        depth, shape, level = self._depth, self._shape, self.level
        b = self._block_state
        front = [Signal(shape, reset_less=True, name=f"front{k}") for k in range(3)]
        m.d.comb += self.o.payload.eq(front[0])
        # ``level >= 3`` and ``level >= 4`` as registers (like ``waiting``)
        up, down = do_push & ~pop, pop & ~do_push
        m.d.sync += [
            b.ge3.eq(Mux(up, level >= 2, Mux(down, level >= 4, b.ge3))),
            b.ge4.eq(Mux(up, level >= 3, Mux(down, level >= 5, b.ge4))),
        ]
        # Memory: written at ``wr_ptr`` in every cycle (that entry is free), read at ``rd_ptr``
        # in every cycle into ``rd_q`` (no logic between: the RAM's output register).
        # A read that meets the write of the same entry is never used (the pointers meet only
        # when the memory is empty, and no read is issued then): the attribute lets the
        # synthesis flow map the RAM without a collision bypass between it and ``rd_q``.
        m.submodules.storage = storage = memory.Memory(shape=shape, depth=depth, init=[],
                                                       attrs=rd_collision_attrs("excluded"))
        wr = storage.write_port()
        rd = storage.read_port(domain="sync")
        rd_q = Signal(shape, reset_less=True)
        rd_ptr, wr_ptr = Signal(range(depth)), Signal(range(depth))
        m.d.comb += [wr.addr.eq(wr_ptr), wr.data.eq(self.data), wr.en.eq(1),
                     rd.addr.eq(rd_ptr)]
        # A pop with items in the memory (level >= 4) moves the item at position 3 to
        # position 2: it is *issued*, read this cycle, in ``rd_q`` two cycles later, when
        # it joins the front at position ``2 - late - pop`` (``late``: a pop in the cycle
        # after the issue).
        issue = pop & b.ge4
        m.d.sync += [rd_q.eq(rd.data), b.issued1.eq(issue), b.issued2.eq(b.issued1),
                     b.late.eq(pop)]
        # A push joins the front at position ``level - pop`` when that is below 3, else the
        # memory.
        direct = do_push & (~b.ge3 | (pop & ~b.ge4))
        to_memory = do_push & ~direct
        # Each front register's next value is computed for both outcomes of the pop, from
        # registers, ``push`` and ``data``, and the pop (from ``o.ready``, the reader's
        # decision) selects between the two: one multiplexer level from the handshake to the
        # 3 x item-width flip-flops, with no enable. Without a pop the pushed item goes to
        # position ``level`` if below 3 (``level < 3``: ``push`` is accepted); with a pop, to
        # ``level - 1`` if below 3.
        at = [~self.o.valid, self.o.valid & ~waiting, waiting & ~b.ge3,
              b.ge3 & ~b.ge4]                            # level == 0, 1, 2, 3
        # the item in ``rd_q`` lands at position 2 - late - pop
        land_stay, land_move = [C(0), b.late, ~b.late], [b.late, ~b.late, C(0)]
        for k in range(3):
            stay = Mux(b.issued2 & land_stay[k], rd_q,
                       Mux(self.push & at[k], self.data, front[k]))
            move = Mux(b.issued2 & land_move[k], rd_q,
                       Mux(self.push & at[k + 1], self.data, front[min(k + 1, 2)]))
            m.d.sync += front[k].eq(Mux(pop, move, stay))
        with m.If(to_memory):
            m.d.sync += wr_ptr.eq(Mux(wr_ptr == depth - 1, 0, wr_ptr + 1))
        with m.If(issue):
            m.d.sync += rd_ptr.eq(Mux(rd_ptr == depth - 1, 0, rd_ptr + 1))

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
        if self._head == "block":
            b = self._block_state
            m.d.comb += [
                Assert(b.ge3 == (self.level >= 3), "queue: ge3 is not level >= 3"),
                Assert(b.ge4 == (self.level >= 4), "queue: ge4 is not level >= 4"),
            ]

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
        if head == "block":
            # an item read from the memory joins the front straight at the head's position
            b = dut._block_state
            m.d.comb += Cover(b.issued2 & b.late & dut.o.valid & dut.o.ready)
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
    fast : tuple of str
        Fields of ``shape`` (a :class:`~amaranth.lib.data.StructLayout`) that the reader
        decides on: each comes out of a register of its own, not through the multiplexer
        (below).

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
    multiplexer level behind the two registers, whose select (the read pointer) drives
    every payload bit. The ``fast`` fields are kept a second time, the head item's in a
    register of their own (the queue's state tells which item is the head), so that the
    reader's decision on them (the arbiter's on a write's ``tracked`` bit) starts at a
    flip-flop, not at the read pointer's wide net.
    """

    def __init__(self, shape, *, fast=()):
        fast = tuple(fast)
        if fast:
            try:
                layout = data.Layout.cast(shape)
            except TypeError:
                layout = None
            members = dict(layout) if isinstance(layout, data.StructLayout) else {}
            unknown = [f for f in fast if f not in members]
            if unknown:
                self._MustUse__silence = True
                raise ValueError(f"fast must name fields of the item's struct layout "
                                 f"{sorted(members)}, not {unknown!r}")
        self._shape, self._fast = shape, fast
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
        if not self._fast:
            wiring.connect(m, queue.o, wiring.flipped(self.o))
            if platform == "formal":
                self.formal_view = queue
            return m
        # The fast fields of the head item in a register (``head``) and of the item behind
        # it in another (``back``), kept by the queue's own state (``o.valid``; ``full``,
        # which at depth 2 is "an item waits behind the head"), as a ``head="register"``
        # queue keeps its head: the head loads on every pop and whenever the slice is empty,
        # from ``back`` if an item waits, else from ``i``.
        layout = data.Layout.cast(self._shape)
        fast_layout = data.StructLayout({f: layout[f].shape for f in self._fast})
        head = Signal(fast_layout, reset_less=True)
        back = Signal(fast_layout, reset_less=True)
        given = Signal(fast_layout)
        m.d.comb += [given[f].eq(self.i.payload[f]) for f in self._fast]
        # ``back`` loads in every cycle the slice is not full, pushed or not (it is read only
        # while an item waits behind the head, and the push that fills the slice is the one
        # it then holds), so that its enable is the slice's own ``full``: neither the reader's
        # decision nor the writer's ``valid`` reaches it, as with the entries (:class:`Queue`).
        pop = queue.o.valid & self.o.ready
        with m.If(~queue.full):
            m.d.sync += back.eq(given)
        with m.If(pop | ~queue.o.valid):
            m.d.sync += head.eq(Mux(queue.full, back, given))
        m.d.comb += [self.o.valid.eq(queue.o.valid), queue.o.ready.eq(self.o.ready)]
        m.d.comb += [self.o.payload[f].eq(head[f] if f in self._fast else queue.o.payload[f])
                     for f in dict(layout)]
        if platform == "formal":
            self.formal_view = queue
        return m


def slice_formal_spec(*, width=2, fast=False):
    """The formal spec top of one :class:`Slice` of ``width``-bit items (``fast``: items of a
    struct of a 1-bit ``flag``, a fast field, and ``width - 1`` other bits): inputs free,
    ``i`` assumed to obey the stream rules; asserted: every item taken on ``i`` is accepted
    by the queue inside (so none is lost), ``i.ready`` is high whenever the slice is not
    full, and the queue's :meth:`Queue.properties` (``o`` obeys the stream rules, first in
    first out, at most 2 items); with ``fast``, ``o`` shows exactly the queue's head item,
    its fast field from the register of its own. Covers: an item passes every cycle for
    three cycles; the slice fills."""

    def body(m, platform):
        if fast:
            dut = Slice(data.StructLayout({"flag": 1, "rest": width - 1}), fast=("flag",))
        else:
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
        if fast:
            m.d.comb += Assert(
                ~dut.o.valid | (dut.o.payload.as_value() == queue.o.payload.as_value()),
                "slice: a fast field differs from the head item's")
        flow = dut.o.valid & dut.o.ready & take
        m.d.comb += [
            Cover(flow & past(m, flow, name="flow1") & past(m, past(m, flow, name="flow2a"),
                                                             name="flow2")),
            Cover(queue.level == 2),
        ]
    return Spec(body)
