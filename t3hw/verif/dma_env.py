# SPDX-License-Identifier: Apache-2.0
"""The cycle-level environment of the DMA (:mod:`t3hw.hw.dma`), scored against its reference
model (:class:`sim_models.dma.DmaModel`), and the scenarios.

* :class:`DmaEnv` (a :class:`~t3hw.verif.env.StreamEnv`): seeded random stimulus for every
  input stream (descriptor writes, triggers, read returns with random latency, back-pressure
  on every output) and a scoreboard that checks every read and every packet field by field
  against :class:`~sim_models.dma.DmaModel`, the stream rules (``valid`` and ``payload`` held
  until the transfer), the outstanding-read limit and ``idle``. It is simulator-agnostic: the
  amaranth.sim test and the cocotb testbench only move its values to and from the ports.
* Scenarios shared by the amaranth.sim tests and the cocotb testbench: :func:`reset_sweep`,
  :func:`drain`, :func:`provoke_errors`, :func:`coincident_rejects`, :func:`full_queue`,
  :func:`back_to_back`, :func:`program_first`.

Field names come from :mod:`t3hw.spec.layouts` through :class:`~t3hw.spec.layouts.Codec`.
"""

from collections import deque
from dataclasses import asdict

from t3hw.spec.layouts import (Codec, WriteKind, dma_program_layout, net_packet_layout,
                               read_request_layout, read_response_layout, trigger_layout)

from sim_models.dma import DmaModel, walk

from .env import Stall, StreamEnv


__all__ = ["DmaEnv", "reset_sweep", "drain", "provoke_errors", "coincident_rejects",
           "full_queue", "back_to_back", "program_first"]


class DmaEnv(StreamEnv):
    """Random stimulus and scoreboard for :class:`t3hw.hw.dma.Dma`.

    Parameters
    ----------
    params : EngineParams
    rng : random.Random
        Seeded source of randomness.
    jobs : int
        Valid triggers to issue (descriptors run); 0 for directed use only.
    errors : float
        Rate of deliberately bad requests (triggers of invalid descriptors, descriptor writes
        with 0 rows or bytes), in [0, 1).
    stall : float
        Probability per cycle that a back-pressure burst starts on ``read`` and on
        ``packet`` (each), in [0, 1).
    max_latency : int
        Longest read-return latency in cycles (at least 1); returns stay in order.
    max_bursts : int
        Largest descriptor (in bursts) the random shapes may produce; when the maximal shape
        of the parameters (all rows, all bytes) fits, 3% of the descriptors have it.

    Scoring
    -------
    Every read is compared with :meth:`DmaModel.next_read`, every packet with the packet of
    the response that produced it; ``valid``/``payload`` of ``read`` and ``packet`` must hold
    until the transfer; requested-and-unreturned reads never exceed ``max_outstanding``;
    ``idle`` is never high while work is pending; ``trigger.ready`` is low in every cycle in
    which a descriptor write is presented. :meth:`check_state` compares the sticky errors and
    the counters. Stimulus rule: a descriptor is never rewritten while a trigger for it is
    presented or any of its triggered runs is unfinished (the RTL reads a descriptor when it
    starts), except through the directed :meth:`write`.
    """

    in_streams  = ("program", "trigger", "response")
    out_streams = ("read", "packet")
    in_flags    = ("clear",)
    out_flags   = ("idle", "busy", "errors", "stats")

    def __init__(self, params, rng, *, jobs=0, errors=0.02, stall=0.05, max_latency=12,
                 max_bursts=256):
        super().__init__()
        for name, value in (("errors", errors), ("stall", stall)):
            if not 0 <= value < 1:
                raise ValueError(f"{name} must be in [0, 1), not {value!r}")
        for name, value in (("max_latency", max_latency), ("max_bursts", max_bursts)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        self.p, self.rng = params, rng
        self.model = DmaModel(params)
        self.jobs, self.error_rate = jobs, errors
        self.max_latency, self.max_bursts = max_latency, max_bursts
        self.program_c  = Codec(dma_program_layout(params))
        self.trigger_c  = Codec(trigger_layout(params))
        self.read_c     = Codec(read_request_layout(params))
        self.response_c = Codec(read_response_layout(params))
        self.packet_c   = Codec(net_packet_layout(params))
        self.read_stall   = Stall(rng, stall, 24)
        self.packet_stall = Stall(rng, stall, 24)
        self.prog = None            # (index, fields) presented on `program`
        self.trig = None            # (cmd, tile) presented on `trigger`
        self.scripted = deque()     # ("program", index, fields) / ("trigger", cmd), in order
        self.returns = deque()      # [due cycle, tag] of requested reads, in order
        self.spurious = 0           # directed: responses to send with nothing requested
        self.corrupt = 0            # directed: returns to send with a wrong tag
        self.expected = deque()     # (Packet, index) whose response has been taken
        self.triggered = 0          # valid triggers accepted
        self.refused = 0            # cycles a presented trigger was not accepted
        self.read_cycles = []       # cycle of every read transfer
        self.started = 0            # valid triggers issued by the random stimulus
        self.bursts = 0             # packets checked
        self.shapes = {}            # shape kind -> descriptors written
        self.clear = 0
        self.in_flight = 0          # reads transferred, responses not yet taken
        self.max_in_flight = 0
        self.latency = None         # fixed read-return latency, else random

    # -- stimulus --------------------------------------------------------------------------
    def write(self, index, **fields):
        """Directed: present a descriptor write (after the ones already scripted)."""
        self.scripted.append(("program", index, fields))

    def fire(self, cmd):
        """Directed: present a trigger (after the requests already scripted)."""
        self.scripted.append(("trigger", cmd))

    def _shape(self):
        p, rng = self.p, self.rng
        max_rows, max_rb, b = (1 << p.rows_width) - 1, (1 << p.row_bytes_width) - 1, \
            p.burst_bytes
        per_row = -(-max_rb // b)
        kind = rng.choice(["one_burst", "one_row", "ragged", "even", "random"])
        if max_rows * per_row <= self.max_bursts and rng.random() < 0.03:
            kind = "max"
        rows_cap = max(1, min(max_rows, 8))
        rb_cap = min(max_rb, 4 * b - 1)
        if kind == "one_burst":
            rows, row_bytes = 1, rng.randint(1, min(b, max_rb))
        elif kind == "one_row":
            rows, row_bytes = 1, rng.randint(1, min(max_rb, b * 4 + b - 1))
        elif kind == "max":
            rows, row_bytes = max_rows, max_rb
        elif kind == "ragged" and rb_cap > b:
            rows = rng.randint(1, rows_cap)
            whole = rng.randint(1, rb_cap // b)
            row_bytes = min(rb_cap, whole * b + rng.randint(1, b - 1)) if b > 1 \
                else rng.randint(2, rb_cap)
        elif kind == "even" and rb_cap >= b:
            rows, row_bytes = rng.randint(1, rows_cap), b * rng.randint(1, rb_cap // b)
        else:
            kind = "random"
            rows, row_bytes = rng.randint(1, rows_cap), rng.randint(1, rb_cap)
        self.shapes[kind] = self.shapes.get(kind, 0) + 1
        return rows, row_bytes

    def _descriptor(self):
        p, rng = self.p, self.rng
        rows, row_bytes = self._shape()
        amask = (1 << p.addr_width) - 1
        r = rng.random()
        if r < 0.3:
            pitch = row_bytes
        elif r < 0.4:
            pitch = 0 if rng.random() < 0.5 else rng.randint(0, row_bytes)
        else:
            pitch = rng.getrandbits(p.pitch_width)
        pitch &= (1 << p.pitch_width) - 1
        return dict(valid=1, op=rng.choice(list(WriteKind)).value,
                    device=rng.getrandbits(p.device_width),
                    tile=rng.getrandbits(p.tile_width), rows=rows, row_bytes=row_bytes,
                    pitch=pitch, src=rng.getrandbits(p.addr_width),
                    dst=(amask - rng.randint(0, 255)) if rng.random() < 0.1
                    else rng.getrandbits(p.addr_width))

    def _new_program(self):
        p, rng = self.p, self.rng
        busy = self.busy_indices()
        if self.trig is not None:
            busy.add(self.trig[0])
        free = [i for i in range(p.dma_descriptors) if i not in busy]
        if not free:
            return None
        index = rng.choice(free)
        r = rng.random()
        if r < self.error_rate:                     # rejected: 0 rows or 0 bytes per row
            fields = self._descriptor()
            fields["rows" if rng.random() < 0.5 else "row_bytes"] = 0
        elif r < self.error_rate + 0.1:             # invalidate
            fields = dict(valid=0)
        else:
            fields = self._descriptor()
        return index, fields

    def _new_trigger(self):
        p, rng = self.p, self.rng
        busy = self.prog[0] if self.prog is not None else None
        if rng.random() < self.error_rate:
            bad = [i for i in range(p.dma_descriptors) if i not in self.model.table and i != busy]
            if bad:
                return rng.choice(bad)
            if self.prog is None:                   # make one invalid, trigger it later
                free = set(range(p.dma_descriptors)) - self.busy_indices()
                if free:
                    self.prog = (rng.choice(sorted(free)), dict(valid=0))
                return None
        good = [i for i in self.model.table if i != busy]
        if not good:
            return None
        self.started += 1
        return rng.choice(good)

    def inputs(self):
        rng, p = self.rng, self.p
        if self.prog is None and self.trig is None and self.scripted:
            what, *args = self.scripted.popleft()
            if what == "program":
                self.prog = (args[0], args[1])
            else:
                self.trig = (args[0], rng.getrandbits(p.tile_width))
        if self.started < self.jobs:
            valid = len(self.model.table)
            if self.prog is None and rng.random() < (0.5 if valid < 2 else 0.05):
                self.prog = self._new_program()
            if self.trig is None and rng.random() < 0.3:
                cmd = self._new_trigger()
                if cmd is not None:
                    self.trig = (cmd, rng.getrandbits(p.tile_width))
        ins = {
            "program":  None if self.prog is None
            else self.program_c.pack(index=self.prog[0], **self.prog[1]),
            "trigger":  None if self.trig is None
            else self.trigger_c.pack(cmd=self.trig[0], tile=self.trig[1]),
            "read":     self.read_stall.ready(),
            "packet":   self.packet_stall.ready(),
            "clear":    self.clear,
        }
        if self.returns and self.returns[0][0] <= self.cycle:
            tag = self.returns[0][1]
            if self.corrupt:
                tag ^= 1
            ins["response"] = self.response_c.pack(tag=tag)
        elif self.spurious and not self.returns:
            ins["response"] = self.response_c.pack(tag=0)
        else:
            ins["response"] = None
        return ins

    # -- scoring ---------------------------------------------------------------------------
    def check(self, outs):
        p, model, cyc = self.p, self.model, self.cycle
        ins = self._ins
        if outs["idle"]:
            assert model.finish() and not self.pending(), f"cycle {cyc}: idle with work pending"
        if outs["busy"]:
            assert not outs["program"] and not outs["trigger"], \
                f"cycle {cyc}: program/trigger ready during the reset sweep"
        # Programming goes first: no trigger is taken in a cycle with a descriptor write
        # presented, so a trigger always checks the table as every earlier write left it.
        assert ins["program"] is None or not outs["trigger"], \
            f"cycle {cyc}: trigger ready with a descriptor write presented"
        if ins["trigger"] is not None and outs["trigger"]:
            self.triggered += model.trigger(self.trig[0])
            self.trig = None
        elif ins["trigger"] is not None:
            self.refused += 1
        if ins["program"] is not None and outs["program"]:
            model.program(self.prog[0], **self.prog[1])
            self.prog = None
        if outs["read"] is not None and ins["read"]:
            got = self.read_c.unpack(outs["read"])
            item = model.next_read()
            assert item is not None, f"cycle {cyc}: unexpected read {got}"
            exp = asdict(item[0])
            assert got == exp, f"cycle {cyc}: read {got}, model {exp}"
            latency = self.latency or self.rng.choice((1, 1, 2,
                                                       self.rng.randint(1, self.max_latency)))
            due = max(cyc + latency, self.returns[-1][0] if self.returns else 0)
            self.read_cycles.append(cyc)
            self.returns.append([due, got["tag"]])
            self.in_flight += 1
        if ins["response"] is not None and outs["response"]:
            if self.returns and self.returns[0][0] <= cyc:
                self.returns.popleft()
                self.corrupt = max(0, self.corrupt - 1)
                self.in_flight -= 1
            else:
                self.spurious -= 1
            got = self.response_c.unpack(ins["response"])["tag"]
            item = model.response(got)
            if item is not None:
                self.expected.append(item)
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        assert self.in_flight <= p.max_outstanding, \
            f"cycle {cyc}: {self.in_flight} reads outstanding, limit {p.max_outstanding}"
        if outs["packet"] is not None and ins["packet"]:
            got = self.packet_c.unpack(outs["packet"])
            assert self.expected, f"cycle {cyc}: unexpected packet {got}"
            pkt, _index = self.expected.popleft()
            assert got == asdict(pkt), f"cycle {cyc}: packet {got}, model {asdict(pkt)}"
            model.packet_sent()
            self.bursts += 1
        self._outs = outs

    def last(self, name):
        """The value ``name`` had at the last sampled cycle."""
        return self._outs[name]

    def busy_indices(self):
        """Descriptors that an accepted trigger still needs: queued, being read, or with
        packets not sent yet. The random stimulus does not rewrite them."""
        m = self.model
        return (set(m.queue) | {b[2] for b in m.bursts_left} | {o[2] for o in m.outstanding}
                | {e[1] for e in self.expected})

    def pending(self):
        """Whether accepted work is left: queued or unfinished runs, reads or packets."""
        m = self.model
        return bool(m.queue or m.bursts_left or m.outstanding or self.expected or self.returns)

    def done(self):
        """All random jobs issued and nothing presented or pending."""
        return (self.started >= self.jobs and self.prog is None and self.trig is None
                and not self.scripted and not self.spurious and not self.pending())

    def check_state(self):
        """Compare the sticky errors and every counter (after the RTL went idle)."""
        assert self._outs["idle"], f"cycle {self.cycle}: not idle"
        assert self.model.finish(), "the model has a valid descriptor the RTL did not run"
        errors_c, stats_c = self.model.errors_codec, self.model.stats_codec
        got_err = errors_c.unpack(self._outs["errors"])
        exp_err = {k: int(v) for k, v in self.model.errors.items()}
        assert got_err == exp_err, f"errors {got_err}, model {exp_err}"
        got_stats = stats_c.unpack(self._outs["stats"])
        assert got_stats == self.model.stats, f"stats {got_stats}, model {self.model.stats}"


# --- scenarios, shared by the amaranth.sim tests and the cocotb testbench ---------------------
# Each takes the environment and ``cycle``, an async function that runs one clock of it on the
# design under test (``env.apply``, settle, ``env.sample``, clock edge).

async def reset_sweep(env, cycle):
    """Run idle cycles until ``busy`` falls; return how many cycles it was high."""
    high = 0
    while True:
        await cycle()
        if not env.last("busy"):
            return high
        high += 1


async def drain(env, cycle, *, limit=100_000):
    """Run until the stimulus is done and the DMA has been idle for two cycles (errors and
    counters show an event the cycle after it), then compare errors and counters."""
    quiet = 0
    for _ in range(limit):
        await cycle()
        quiet = quiet + 1 if env.done() and env.last("idle") else 0
        if quiet == 2:
            env.check_state()
            return
    raise AssertionError(f"not idle after {limit} cycles (cycle {env.cycle})")


async def provoke_errors(env, cycle):
    """Provoke every error bit alone, compare every bit and counter, clear it."""
    p = env.p
    b = p.burst_bytes
    big = dict(valid=1, op=1, device=1, tile=1, rows=min(3, (1 << p.rows_width) - 1),
               row_bytes=min(2 * b, (1 << p.row_bytes_width) - 1), pitch=0, src=0, dst=0)
    n = p.dma_descriptors

    async def expect(name):
        await drain(env, cycle)
        set_bits = {k for k, v in env.model.errors.items() if v}
        assert set_bits == {name}, f"expected only {name}, model has {set_bits}"
        env.clear = (1 << env.model.errors_codec.width) - 1
        await cycle()
        env.clear = 0
        env.model.clear_errors()
        await drain(env, cycle)
        assert not any(env.model.errors.values())

    # bad_descriptor, at the trigger: nothing was ever written to the last index.
    env.fire(n - 1)
    await expect("bad_descriptor")
    # bad_descriptor, at the start: invalidated while its index waits in the ready queue
    # (reads held, so the first run holds the engine and the second the descriptor register).
    env.read_stall.hold = True
    for i in range(min(3, n)):
        env.write(i, **big)
    for i in range(min(3, n)):
        env.fire(i % n)
    for _ in range(40):
        await cycle()
    env.write(min(2, n - 1), valid=0)
    for _ in range(4):
        await cycle()
    env.read_stall.hold = False
    await expect("bad_descriptor")
    assert env.model.stats["rejected"] == 2
    # bad_program: 0 rows, then 0 bytes per row; the table keeps the old descriptor.
    env.write(0, **dict(big, rows=0))
    env.write(0, **dict(big, row_bytes=0))
    env.fire(0)
    await expect("bad_program")
    # bad_response: a return with the wrong tag (its packet still leaves) ...
    env.corrupt = 1
    env.write(0, **dict(big, rows=1, row_bytes=1))
    env.fire(0)
    await expect("bad_response")
    # ... and a return with no read requested (dropped).
    env.spurious = 1
    await expect("bad_response")


async def coincident_rejects(env, cycle, *, offsets=16):
    """A trigger of an invalid descriptor presented 0 .. ``offsets - 1`` cycles after the
    start of an invalidated one is released: at some offset both are rejected in the same
    cycle, and ``rejected`` must count both."""
    p = env.p
    n = p.dma_descriptors
    big = dict(valid=1, op=0, device=1, tile=1, rows=min(2, (1 << p.rows_width) - 1),
               row_bytes=min(2 * p.burst_bytes, (1 << p.row_bytes_width) - 1), pitch=0,
               src=0, dst=0)
    for offset in range(offsets):
        env.read_stall.hold = True
        for i in range(3):
            env.write(i, **big)
        for i in range(3):
            env.fire(i)
        for _ in range(30):
            await cycle()
        env.write(2, valid=0)
        for _ in range(3):
            await cycle()
        env.read_stall.hold = False
        for _ in range(offset):
            await cycle()
        env.fire(n - 1)                         # never written: rejected at the check
        await drain(env, cycle)                 # compares `rejected` with the model
    assert env.model.stats["rejected"] == 2 * offsets


async def full_queue(env, cycle):
    """With reads held, triggers fill the engine, the descriptor register and the ready
    queue, then wait on ``ready``; none is lost. Returns how many were accepted held."""
    p = env.p
    desc = dict(valid=1, op=0, device=1, tile=1, rows=1,
                row_bytes=min(2 * p.burst_bytes, (1 << p.row_bytes_width) - 1),
                pitch=0, src=64, dst=128)
    extra = 3
    env.read_stall.hold = True
    env.write(0, **desc)
    for _ in range(p.dma_ready_depth + 2 + extra):
        env.fire(0)
    for _ in range(4 * p.dma_ready_depth + 40):
        await cycle()
    held = env.triggered
    assert held == p.dma_ready_depth + 2, f"{held} triggers accepted with reads held"
    assert env.refused > 0, "trigger.ready never fell with the ready queue full"
    env.read_stall.hold = False
    await drain(env, cycle)
    assert env.triggered == p.dma_ready_depth + 2 + extra
    return held


async def back_to_back(env, cycle, *, runs=3):
    """With no back-pressure and 1-cycle returns, ``runs`` queued descriptors read one burst
    per cycle with no gap, when ``max_outstanding`` covers the return loop (3 reads)."""
    p = env.p
    env.latency = 1
    env.read_stall.rate = env.packet_stall.rate = 0
    rows = min(2, (1 << p.rows_width) - 1)
    row_bytes = min(3 * p.burst_bytes, (1 << p.row_bytes_width) - 1)
    desc = dict(valid=1, op=1, device=0, tile=1, rows=rows, row_bytes=row_bytes,
                pitch=min(4096, (1 << p.pitch_width) - 1), src=0, dst=0)
    for i in range(runs):
        env.write(i % p.dma_descriptors, **desc)
    env.read_stall.hold = True                  # queue every run before the first read
    for i in range(runs):
        env.fire(i % p.dma_descriptors)
    for _ in range(3 * runs + 8):
        await cycle()
    first = len(env.read_cycles)
    env.read_stall.hold = False
    await drain(env, cycle)
    got = env.read_cycles[first:]
    assert len(got) == runs * len(list(walk(p, desc)))
    if p.max_outstanding >= 3:
        assert got == list(range(got[0], got[0] + len(got))), f"gaps in read cycles {got}"
    return got


async def program_first(env, cycle):
    """A descriptor write and a trigger of the same, invalid, descriptor presented in the
    same cycle: the write is taken and the trigger held that cycle; the next cycle the
    trigger is taken, finds the descriptor valid and runs it (nothing rejected)."""
    p = env.p
    index = p.dma_descriptors - 1
    desc = dict(valid=1, op=1, device=1, tile=3, rows=1,
                row_bytes=min(2 * p.burst_bytes, (1 << p.row_bytes_width) - 1), pitch=0,
                src=0x40, dst=0x80)
    env.write(index, valid=0)
    await drain(env, cycle)
    runs = env.triggered
    env.prog = (index, desc)
    env.trig = (index, 0)
    await cycle()
    assert env.prog is None and env.trig is not None, "the write did not go first"
    await cycle()
    assert env.trig is None, "the trigger was not taken the cycle after the write"
    await drain(env, cycle)
    assert env.triggered == runs + 1 and env.model.stats["rejected"] == 0
