# SPDX-License-Identifier: Apache-2.0
"""The cycle-level environment of the DMA (:mod:`t3hw.hw.dma`), scored against its reference
model (:class:`sim_models.dma.DmaModel`), and the scenarios.

* :class:`DmaEnv` (a :class:`~t3hw.verif.env.StreamEnv`): seeded random stimulus for every
  input stream (descriptor writes, triggers, read returns with random latency, back-pressure
  on every output) and a scoreboard that checks every read and every packet field by field
  against :class:`~sim_models.dma.DmaModel`, the stream rules (``valid`` and ``payload`` held
  until the transfer), the outstanding-read limit and ``idle``. It is simulator-agnostic: the
  amaranth.sim test and the cocotb testbench only move its values to and from the ports.
* The scenarios shared by the amaranth.sim tests and the cocotb testbench are in
  :mod:`t3hw.verif.dma_scenarios`.

Field names come from :mod:`t3hw.spec.layouts` through :class:`~t3hw.spec.layouts.Codec`.
"""

from collections import deque
from dataclasses import asdict

from t3hw.spec.contract import dma_program_cycles, dma_verdict_cycles
from t3hw.spec.layouts import (Codec, WriteKind, dma_capture_layout, dma_program_layout,
                               net_packet_layout, read_request_layout, read_response_layout,
                               trigger_layout)

from sim_models.dma import DmaModel

from .env import Stall, StreamEnv


__all__ = ["DmaEnv"]


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
        Rate of deliberately bad requests, in [0, 1): triggers of invalid descriptors,
        descriptor writes refused for their content (0 rows or bytes, overlapping rows, a
        wrapping range), and read returns with the ``error`` bit (half that rate) or a wrong
        tag (a quarter).
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
    until the transfer; requested-and-unreturned reads plus packets made and not sent never
    exceed ``max_outstanding``; every read return is taken at once;
    ``idle`` is never high while work is pending; ``trigger.ready`` is low in every cycle in
    which a descriptor write is presented or checked, and ``program.ready`` is exactly
    ``not busy`` outside the :func:`~t3hw.spec.contract.dma_program_cycles` after a write is
    taken. ``clear`` is all ones in every cycle (as the register block drives it), so
    ``errors`` shows each cycle's events: every cycle they must be the model's events of
    that cycle (a response the cycle after, a refused write
    :func:`~t3hw.spec.contract.dma_verdict_cycles` after it is taken, a rejected trigger 3
    cycles after it is accepted), and ``capture`` the details of the one that wins
    (response, then write, then trigger). :meth:`check_state` compares the errors seen and
    the counters. Stimulus rule: a random write is presented only when the DMA takes it at
    once, and avoids a descriptor whose only queued triggers are the model's first three (the
    RTL may have started it already), and one whose invalid trigger was accepted in the last
    2 cycles (still being checked); every other write, to a busy descriptor too, has an
    exact verdict. ``desc_held`` (the tracker's answer, sampled two cycles after a write is
    taken) is high then for 5% of the random writes, which are refused, and random (5%) in
    every other cycle, which must not matter.
    """

    in_streams  = ("program", "trigger", "response")
    out_streams = ("read", "packet")
    in_flags    = ("clear", "desc_held")
    out_flags   = ("idle", "busy", "errors", "capture", "stats")


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
        #: Cycles from a model event to the RTL's ``errors``, and its rank for ``capture``.
        self.event_delay = {"response": (2, 0), "program": (dma_verdict_cycles(params), 1),
                            "trigger": (3, 2)}
        self.checked_until = -1     # last cycle of the check of the last write taken
        self._outs = {}             # the outputs of the last cycle
        self.model = DmaModel(params)
        self.jobs, self.error_rate = jobs, errors
        self.max_latency, self.max_bursts = max_latency, max_bursts
        self.program_c  = Codec(dma_program_layout(params))
        self.trigger_c  = Codec(trigger_layout(params))
        self.read_c     = Codec(read_request_layout(params))
        self.response_c = Codec(read_response_layout(params))
        self.packet_c   = Codec(net_packet_layout(params))
        self.capture_c  = Codec(dma_capture_layout(params))
        self.read_stall   = Stall(rng, stall, 24)
        self.packet_stall = Stall(rng, stall, 24)
        self.prog = None            # (index, fields) presented on `program`
        self.trig = None            # (cmd, tile) presented on `trigger`
        self.scripted = deque()     # ("program", index, fields) / ("trigger", cmd), in order
        self.returns = deque()      # [due cycle, tag, fault] of requested reads, in order
        self.faults = {}            # directed: read number -> "error" / "tag" for its return
        self.spurious = 0           # directed: responses to send with nothing requested
        self.expected = deque()     # (Packet, index) whose response has been taken
        self.triggered = 0          # valid triggers accepted
        self.refused = 0            # cycles a presented trigger was not accepted
        self.read_cycles = []       # cycle of every read transfer
        self.started = 0            # valid triggers issued by the random stimulus
        self.bursts = 0             # packets checked
        self.sent = []              # every packet checked (fields)
        self.shapes = {}            # shape kind -> descriptors written
        self.clear = (1 << self.model.errors_codec.width) - 1
        self.held_due = None        # desc_held to drive next cycle: a write was taken
        self.held_later = None      # ... and in the cycle after (the last write was taken)
        self.in_flight = 0          # reads transferred, responses not yet taken
        self.max_in_flight = 0
        self.max_waiting = 0        # most packets made and not yet sent
        self.latency = None         # fixed read-return latency, else random
        self.due = {}               # cycle -> [(rank, name, capture)] expected on `errors`
        self.seen = {name: False for name in self.model.errors}    # events the RTL showed
        self.events = {name: 0 for name in self.model.errors}      # ...counted
        self.checking = {}          # cmd -> cycle its invalid trigger was accepted
        self.stop_at = None         # cycle of the model's stop_walk after an abort

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
        if row_bytes >= 1 << p.pitch_width:         # no pitch separates the rows
            rows = 1
        self.shapes[kind] = self.shapes.get(kind, 0) + 1
        return rows, row_bytes

    def _descriptor(self, bad=None):
        """Random descriptor fields; ``bad``: ``"bad_pitch"`` or ``"bad_range"`` to make one
        the DMA refuses for that reason (when the parameters allow it)."""
        p, rng = self.p, self.rng
        rows, row_bytes = self._shape()
        top = (1 << p.pitch_width) - 1
        if bad == "bad_pitch" and p.rows_width > 1 and row_bytes > 1:
            rows = max(rows, 2)
            pitch = rng.randint(0, row_bytes - 1)
        elif rows == 1:
            pitch = rng.getrandbits(p.pitch_width)  # any: one row never overlaps
        else:
            r = rng.random()
            pitch = row_bytes if r < 0.3 else \
                rng.randint(row_bytes, min(top, row_bytes + 8)) if r < 0.4 else \
                rng.randint(row_bytes, top)
        span = (rows - 1) * pitch + row_bytes - 1
        room = (1 << p.addr_width) - 1 - span        # highest base that does not wrap
        bases = []
        for _ in range(2):
            r = rng.random()
            bases.append(room if r < 0.1 else room - rng.randint(0, min(room, 255)) if r < 0.2
                         else rng.randint(0, room))
        if bad == "bad_range" and span > 0:
            which = rng.randrange(2)
            bases[which] = rng.randint(room + 1, (1 << p.addr_width) - 1)
        return dict(valid=1, op=rng.choice(list(WriteKind)).value,
                    device=rng.getrandbits(p.device_width),
                    tile=rng.getrandbits(p.tile_width), rows=rows, row_bytes=row_bytes,
                    pitch=pitch, src=bases[0], dst=bases[1])

    def ambiguous(self):
        """Descriptors whose write verdict the model cannot tell: only the first three queued
        triggers name them, or an invalid trigger of them is still being checked. The model
        starts a descriptor when its first read is taken; the DMA releases it when the walker
        takes it, which can be three descriptors earlier: one whose first burst waits in the
        ``read`` register (taken in the write's cycle, which the model scores after the
        write), the walker's, whose burst is loaded in that cycle, and the next, which the
        walker takes in the same cycle (the write's verdict counts that cycle's takes)."""
        queue = [i for i, _ in self.model.queue]
        return ((set(queue[:3]) - set(queue[3:]))
                | {i for i, c in self.checking.items() if self.cycle - c <= 2})

    def _new_program(self):
        p, rng = self.p, self.rng
        avoid = self.ambiguous()
        free = [i for i in range(p.dma_descriptors) if i not in avoid]
        if not free:
            return None
        index = rng.choice(free)
        r = rng.random()
        if r < self.error_rate:                     # refused for its content
            kind = rng.choice(["bad_program", "bad_pitch", "bad_range"])
            fields = self._descriptor(None if kind == "bad_program" else kind)
            if kind == "bad_program":
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
                free = set(range(p.dma_descriptors)) - self.ambiguous() - \
                    {i for i, _ in self.model.queue}
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
            takes_now = self.cycle > self.checked_until and not self._outs.get("busy", 1)
            if self.prog is None and takes_now and rng.random() < (0.5 if valid < 2 else 0.05):
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
            # the tracker's answer for the write taken two cycles ago (held now and then: the
            # write must then be refused as desc_busy); noise in other cycles
            "desc_held": int(self.held_due if self.held_due is not None
                             else rng.random() < 0.05),
        }
        if self.returns and self.returns[0][0] <= self.cycle:
            _, tag, fault = self.returns[0]
            ins["response"] = self.response_c.pack(tag=tag ^ (fault == "tag"),
                                                   error=int(fault == "error"))
        elif self.spurious and not self.returns:
            ins["response"] = self.response_c.pack(tag=0)
        else:
            ins["response"] = None
        self.held_due, self.held_later = self.held_later, None
        return ins

    # -- scoring ---------------------------------------------------------------------------
    def _schedule(self, source):
        """Expect the model's new events on ``errors`` after the delay of ``source``."""
        delay, rank = self.event_delay[source]
        for name, capture in self.model.events:
            self.due.setdefault(self.cycle + delay, []).append((rank, name, capture))
        self.model.events.clear()

    def _check_events(self, outs):
        cyc = self.cycle
        due = sorted(self.due.pop(cyc, []), key=lambda e: e[0])
        got = self.model.errors_codec.unpack(outs["errors"])
        exp = {name: int(any(n == name for _, n, _ in due)) for name in got}
        assert got == exp, f"cycle {cyc}: error events {got}, model {exp}"
        if due:
            cap = self.capture_c.unpack(outs["capture"])
            assert cap == due[0][2], f"cycle {cyc}: capture {cap} for {due[0][1]}, model " \
                                     f"{due[0][2]}"
        for name, bit in got.items():
            self.seen[name] |= bool(bit)
            self.events[name] += bit

    def _fault(self):
        """The fault of the return of the read being transferred (directed or random)."""
        n = len(self.read_cycles)
        if n in self.faults:
            return self.faults.pop(n)
        r = self.rng.random() if self.jobs else 1
        return "error" if r < self.error_rate / 2 else "tag" if r < self.error_rate * 0.75 \
            else None

    def check(self, outs):
        p, model, cyc = self.p, self.model, self.cycle
        ins = self._ins
        self._check_events(outs)
        if self.stop_at == cyc:
            model.stop_walk(held=outs["read"] is not None)
            self.stop_at = None
        if outs["idle"]:
            assert model.finish() and not self.pending(), f"cycle {cyc}: idle with work pending"
        if outs["busy"]:
            assert not outs["program"] and not outs["trigger"], \
                f"cycle {cyc}: program/trigger ready during the reset sweep"
        # Programming goes first: no trigger is taken in a cycle with a descriptor write
        # presented or checked, so a trigger always checks the table as every earlier write
        # left it; one write is checked at a time.
        checking = cyc <= self.checked_until
        assert (ins["program"] is None and not checking) or not outs["trigger"], \
            f"cycle {cyc}: trigger ready with a descriptor write presented or checked"
        assert outs["program"] == (not outs["busy"] and not checking), \
            f"cycle {cyc}: program.ready {outs['program']}, busy {outs['busy']}, " \
            f"checking {checking}"
        if ins["trigger"] is not None and outs["trigger"]:
            if model.trigger(*self.trig):
                self.triggered += 1
            else:
                self.checking[self.trig[0]] = cyc
            self._schedule("trigger")
            self.trig = None
        elif ins["trigger"] is not None:
            self.refused += 1
        if ins["program"] is not None and outs["program"]:
            self.held_later = self.jobs > 0 and self.rng.random() < 0.05
            model.program(self.prog[0], held=self.held_later, **self.prog[1])
            self._schedule("program")
            self.checked_until = cyc + dma_program_cycles(p) - 1
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
            fault = self._fault()
            self.read_cycles.append(cyc)
            self.returns.append([due, got["tag"], fault])
            self.in_flight += 1
        if ins["response"] is not None and outs["response"]:
            if self.returns and self.returns[0][0] <= cyc:
                self.returns.popleft()
                self.in_flight -= 1
            else:
                self.spurious -= 1
            fields = self.response_c.unpack(ins["response"])
            before = model.stats["aborted"]
            item = model.response(fields["tag"], fields["error"])
            self._schedule("response")
            if model.stats["aborted"] != before:
                self.stop_at = cyc + 1
            if item is not None:
                self.expected.append(item)
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.max_waiting = max(self.max_waiting, len(self.expected))
        # a read holds its place until its packet leaves: reads outstanding plus packets
        # made and not sent
        assert self.in_flight + len(self.expected) <= p.max_outstanding, \
            f"cycle {cyc}: {self.in_flight} reads outstanding and {len(self.expected)} " \
            f"packets waiting, limit {p.max_outstanding}"
        assert ins["response"] is None or outs["response"], \
            f"cycle {cyc}: a read return was held"
        if outs["packet"] is not None and ins["packet"]:
            got = self.packet_c.unpack(outs["packet"])
            assert self.expected, f"cycle {cyc}: unexpected packet {got}"
            pkt, _index = self.expected.popleft()
            assert got == asdict(pkt), f"cycle {cyc}: packet {got}, model {asdict(pkt)}"
            model.packet_sent()
            self.bursts += 1
            self.sent.append(got)
        self._outs = outs

    def last(self, name):
        """The value ``name`` had at the last sampled cycle."""
        return self._outs[name]

    def pending(self):
        """Whether accepted work is left: queued or unfinished runs, reads or packets."""
        m = self.model
        return bool(m.queue or m.bursts_left or m.outstanding or self.expected or self.returns)

    def done(self):
        """All random jobs issued and nothing presented, checked, pending or due on
        ``errors``."""
        return (self.started >= self.jobs and self.prog is None and self.trig is None
                and not self.scripted and not self.spurious and not self.pending()
                and not self.due and self.cycle > self.checked_until)

    def check_state(self):
        """Compare the errors seen and every counter (after the RTL went idle)."""
        assert self._outs["idle"], f"cycle {self.cycle}: not idle"
        assert self.model.finish(), "the model has a descriptor the RTL did not run"
        exp_err = {k: bool(v) for k, v in self.model.errors.items()}
        assert self.seen == exp_err, f"errors seen {self.seen}, model {exp_err}"
        got_stats = self.model.stats_codec.unpack(self._outs["stats"])
        assert got_stats == self.model.stats, f"stats {got_stats}, model {self.model.stats}"

    def clear_errors(self):
        """Forget the errors seen, in the model too (the sticky copies of a register block)."""
        self.model.clear_errors()
        self.seen = {name: False for name in self.seen}
