# SPDX-License-Identifier: Apache-2.0
"""amaranth.sim tests of :class:`t3hw.hw.queue.Queue`, every ``head`` variant, against a
Python deque cycle by cycle, at depths beyond those the formal proofs reach (``docs/formal.md``:
depths 1 to 5).

Every variant must have the same cycle behaviour: an item pushed in cycle t is at ``o`` in
cycle t + 1 if nothing is ahead of it, ``accept`` is "not full, or the head leaves", and the
head is always the oldest item. The stimulus pushes and pops at random rates chosen per
phase (filling, draining, balanced, idle), so the queue is filled to capacity, pushed while
full, and emptied, many times.
"""

import random
from collections import deque

import pytest
from amaranth.lib import data
from amaranth.sim import Simulator

from t3hw.hw.queue import BLOCK_MIN_DEPTH, Queue, Slice


WIDTH = 12

#: (push probability, pop probability) of each phase of the stimulus
PHASES = [(0.9, 0.2), (0.2, 0.9), (0.7, 0.7), (1.0, 1.0), (0.1, 0.1), (1.0, 0.0), (0.0, 1.0)]


def _run(depth, head, seed, cycles=4000):
    dut = Queue(WIDTH, depth=depth, head=head)
    rng = random.Random(seed)
    ref = deque()
    seen = {"full_push_pop": 0, "full": 0, "empty_after_full": 0}
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        was_full = False
        phase = PHASES[0]
        for cycle in range(cycles):
            if cycle % 97 == 0:
                phase = rng.choice(PHASES)
            push, ready = rng.random() < phase[0], rng.random() < phase[1]
            data = rng.getrandbits(WIDTH)
            ctx.set(dut.push, push)
            ctx.set(dut.data, data)
            ctx.set(dut.o.ready, ready)
            level, valid = ctx.get(dut.level), ctx.get(dut.o.valid)
            where = f"depth {depth} head {head} seed {seed} cycle {cycle}"
            assert level == len(ref), where
            assert valid == (len(ref) > 0), where
            assert ctx.get(dut.full) == (len(ref) == depth), where
            pop = valid and ready
            if valid:
                assert ctx.get(dut.o.payload) == ref[0], where
            assert ctx.get(dut.accept) == (len(ref) < depth or pop), where
            full = len(ref) == depth
            seen["full"] += full
            seen["full_push_pop"] += full and push and pop
            if full:
                was_full = True
            if was_full and not ref:
                seen["empty_after_full"] += 1
                was_full = False
            if pop:
                ref.popleft()
            if push and ctx.get(dut.accept):
                ref.append(data)
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    return seen


@pytest.mark.parametrize("head, depth", [
    ("register", 1), ("register", 2), ("register", 7), ("register", 16),
    ("select", 2), ("memory", 3), ("memory", 16),
    ("block", BLOCK_MIN_DEPTH), ("block", 5), ("block", 8), ("block", 13), ("block", 32),
])
def test_queue_is_a_fifo(head, depth, seed):
    seen = _run(depth, head, seed)
    # the stimulus reached what it is for: a full queue, a push while full and its head
    # leaving, and a full queue drained
    assert seen["full"] and seen["full_push_pop"] and seen["empty_after_full"], seen


@pytest.mark.parametrize("head, depth", [("select", 3), ("block", BLOCK_MIN_DEPTH - 1),
                                         ("bram", 8), ("register", 0)])
def test_bad_parameters_raise(head, depth):
    with pytest.raises(ValueError, match=f"{depth!r}|{head!r}"):
        Queue(4, depth=depth, head=head)


def test_slice_with_fast_fields_is_a_fifo(seed):
    """A :class:`Slice` with a fast field passes every item in order, the fast field and the
    rest of each item as they went in, under random ``valid`` and ``ready`` (the stimulus
    phases above), and its ``i.ready`` is "fewer than 2 items held"."""
    layout = data.StructLayout({"flag": 1, "rest": WIDTH - 1})
    dut = Slice(layout, fast=("flag",))
    rng = random.Random(seed)
    ref = deque()
    passed = {"items": 0, "flag": 0}
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        phase = PHASES[0]
        for cycle in range(4000):
            if cycle % 97 == 0:
                phase = rng.choice(PHASES)
            valid, ready = rng.random() < phase[0], rng.random() < phase[1]
            item = {"flag": rng.getrandbits(1), "rest": rng.getrandbits(WIDTH - 1)}
            ctx.set(dut.i.valid, valid)
            ctx.set(dut.i.payload, item)
            ctx.set(dut.o.ready, ready)
            where = f"seed {seed} cycle {cycle}"
            taken = valid and ctx.get(dut.i.ready)      # a register: before the pop below
            assert ctx.get(dut.i.ready) == (len(ref) < 2), where
            assert ctx.get(dut.o.valid) == bool(ref), where
            if ref:
                out = ctx.get(dut.o.payload)
                assert (out.flag, out.rest) == ref[0], where
            if ref and ready:
                passed["items"] += 1
                passed["flag"] += ref.popleft()[0]
            if taken:
                ref.append((item["flag"], item["rest"]))
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert passed["items"] > 500 and passed["flag"] > 150, passed


def test_slice_fast_must_name_fields():
    layout = data.StructLayout({"flag": 1, "rest": 3})
    with pytest.raises(ValueError, match=r"\['flag', 'rest'\].*\['nope'\]"):
        Slice(layout, fast=("nope",))
    with pytest.raises(ValueError, match="not \\['flag'\\]"):
        Slice(4, fast=("flag",))
