# SPDX-License-Identifier: Apache-2.0
"""Simulation-only HDL of the co-simulation's fixed-latency NMC DRAM timing
(:class:`sim_models.dram.NmcDram` without refusal bursts), for the fast co-simulation.

Timing only: the data stays in numpy. Every request the DRAM serves is shown on the
``serve`` port for the cycle it is served, so that the simulation top can log it and the
testbench replay the near-memory additions in the same order afterwards
(:mod:`t3hw.verif.cosim_fast_tb`).

Cycle ``c``, as :class:`~sim_models.cosim.SystemEnv` runs :class:`NmcDram`: a request
transferred on ``req`` is due at ``c + latency``; the oldest request is served in the first
cycle at or after its due cycle (one per cycle, in order); a served read's response
(``source``, ``tag``) is offered on ``rsp`` from the next cycle, in order, each held until
taken; ``occupancy`` is the number of requests taken and not yet served (saturated at the
port's width), as the testbench drives it.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from t3hw.spec.layouts import MemOp, mem_request_layout, mem_response_layout
from t3hw.spec.params import EngineParams


__all__ = ["FixedDram", "CYCLE_WIDTH", "dram_members"]

#: Width of the co-simulation's cycle number in the simulation-only HDL.
CYCLE_WIDTH = 40


def _check(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], not {value!r}")


def dram_members(params):
    """The members of a simulation-only DRAM (:class:`FixedDram`, and the HBM2 one of
    :mod:`t3hw.verif.simhdl.hbm`): the same ports, so the simulation top takes either."""
    return {
        "cycle":       In(CYCLE_WIDTH),
        "result_base": In(params.addr_width),
        "req":         In(stream.Signature(mem_request_layout(params))),
        "rsp":         Out(stream.Signature(mem_response_layout(params))),
        "occupancy":   Out(params.occupancy_width),
        "serve_valid": Out(1),
        "serve":       Out(mem_request_layout(params)),
        "r_writes":    Out(48),
        "last_write":  Out(CYCLE_WIDTH),
        "idle":        Out(1),
        "error":       Out(2),
        "error_cycle": Out(CYCLE_WIDTH),
    }


class FixedDram(wiring.Component):
    """One GPU's DRAM: in order, one request per cycle, ``latency`` cycles (module docstring).

    Parameters
    ----------
    params : EngineParams
        The engine's parameters (request and response layouts, occupancy width).
    latency : int
        Cycles from taking a request to serving it, at least; in [1, 4096].
    rsp_depth : int
        Responses the DRAM holds while ``rsp`` is back-pressured, in [2, 65536].

    Members
    -------
    cycle : In(40)
        The co-simulation's cycle number.
    result_base : In(params.addr_width)
        Writes at or above it count into ``r_writes`` (the collective's completion).
    req : In(stream.Signature(mem_request_layout))
        From the engine's ``dram`` port. ``ready`` is low only when the request queue is full,
        which the Python model never is: that sets ``error`` bit 0.
    rsp : Out(stream.Signature(mem_response_layout))
        To the engine's ``dram_response`` port.
    occupancy : Out(params.occupancy_width)
        Requests taken and not served.
    serve_valid, serve : Out(1), Out(mem_request_layout)
        The request served this cycle.
    r_writes, last_write : Out(48), Out(40)
        Bytes written at or above ``result_base``, and the cycle of the last such write.
    idle : Out(1)
        No request waiting and no response held.
    error, error_cycle : Out(2), Out(40)
        Sticky: bit 0 a request was refused (queue full), bit 1 a response was lost (response
        queue full); the cycle of the first.
    """

    def __init__(self, params: EngineParams = EngineParams(), *, latency, rsp_depth=256):
        try:
            _check("latency", latency, 1, 4096)
            _check("rsp_depth", rsp_depth, 2, 65536)
        except ValueError:
            self._MustUse__silence = True
            raise
        self._p, self.latency = params, latency
        self.depth = 1 << (latency + 2).bit_length()        # more than latency + 1 in flight
        self.rsp_depth = rsp_depth
        super().__init__(dram_members(params))

    def elaborate(self, platform):
        m = Module()
        p = self._p
        entry = data.StructLayout({"due": CYCLE_WIDTH, "req": mem_request_layout(p)})
        q = m.submodules.requests = Memory(shape=entry, depth=self.depth, init=[])
        qw, qr = q.write_port(), q.read_port(domain="comb")
        r = m.submodules.responses = Memory(shape=mem_response_layout(p), depth=self.rsp_depth,
                                    init=[])
        rw, rr = r.write_port(), r.read_port(domain="comb")

        q_head, q_tail = Signal(range(self.depth)), Signal(range(self.depth))
        q_count = Signal(range(self.depth + 1))
        r_head, r_tail = Signal(range(self.rsp_depth)), Signal(range(self.rsp_depth))
        r_count = Signal(range(self.rsp_depth + 1))

        take = Signal()
        serve = Signal()
        m.d.comb += [
            self.req.ready.eq(q_count < self.depth),
            take.eq(self.req.valid & self.req.ready),
            qw.addr.eq(q_tail), qw.en.eq(take),
            qw.data.due.eq(self.cycle + self.latency), qw.data.req.eq(self.req.payload),
            qr.addr.eq(q_head),
            serve.eq((q_count != 0) & (qr.data.due <= self.cycle)),
            self.serve_valid.eq(serve),
            self.serve.eq(qr.data.req),
            self.occupancy.eq(Mux(q_count >> len(self.occupancy) != 0,
                                  (1 << len(self.occupancy)) - 1, q_count)),
        ]
        with m.If(take):
            m.d.sync += q_tail.eq(Mux(q_tail == self.depth - 1, 0, q_tail + 1))
        with m.If(serve):
            m.d.sync += q_head.eq(Mux(q_head == self.depth - 1, 0, q_head + 1))
        m.d.sync += q_count.eq(q_count + take - serve)

        # responses of the reads served, in order, from the next cycle
        is_read = qr.data.req.op == MemOp.READ
        push = Signal()
        pop = Signal()
        m.d.comb += [
            push.eq(serve & is_read & (r_count < self.rsp_depth)),
            rw.addr.eq(r_tail), rw.en.eq(push),
            rw.data.source.eq(qr.data.req.source), rw.data.tag.eq(qr.data.req.tag),
            rr.addr.eq(r_head),
            self.rsp.valid.eq(r_count != 0),
            self.rsp.payload.eq(rr.data),
            pop.eq(self.rsp.valid & self.rsp.ready),
        ]
        with m.If(push):
            m.d.sync += r_tail.eq(Mux(r_tail == self.rsp_depth - 1, 0, r_tail + 1))
        with m.If(pop):
            m.d.sync += r_head.eq(Mux(r_head == self.rsp_depth - 1, 0, r_head + 1))
        m.d.sync += r_count.eq(r_count + push - pop)

        with m.If(serve & ~is_read & (qr.data.req.addr >= self.result_base)):
            m.d.sync += [self.r_writes.eq(self.r_writes + qr.data.req.bytes),
                         self.last_write.eq(self.cycle)]
        m.d.comb += self.idle.eq((q_count == 0) & (r_count == 0))

        refused = self.req.valid & ~self.req.ready
        lost = serve & is_read & (r_count == self.rsp_depth)
        with m.If((refused | lost) & (self.error == 0)):
            m.d.sync += self.error_cycle.eq(self.cycle)
        m.d.sync += self.error.eq(self.error | Cat(refused, lost))
        return m
