# SPDX-License-Identifier: Apache-2.0
"""The performance model's ring phases and its in-order request streams: the Sequential
baseline's reduce-scatter (with the reduction kernel, or in memory) and the all-gather,
each in N-1 synchronous steps (:func:`ring_sim`), and :class:`Fifo`, a stream's requests
served in order, which :mod:`sim_models.perf`'s GEMM phases use too."""

from collections import deque

from .engine_model import Arbiter
from t3hw.spec.layouts import MemOp


__all__ = ["Fifo", "ring_sim"]


class Fifo:
    """A stream's requests at the DRAM, served in order: ``[bytes_left, kind, key, arr]``."""

    def __init__(self):
        self.q = deque()

    def push(self, kind, key, nbytes, arr=None):
        self.q.append([float(nbytes), kind, key, nbytes, arr])

    def serve(self, amount, deliver=None):
        """Consume ``amount`` bytes from the head; return the entries completed."""
        done = []
        while self.q and amount > 1e-9:
            e = self.q[0]
            take = min(amount, e[0])
            if e[4] is not None:                     # aggregated tile reads: per-CU array
                part = e[4] * (take / e[0])
                e[4] -= part
                deliver(part)
            e[0] -= take
            amount -= take
            # A thousandth of a byte left is float rounding of the DRAM's byte account (which
            # clamps its backlog at 0), not a request: waiting for it would wait forever
            # (T-NLG FC-2 on 8 GPUs at 512 tokens left 2.3e-6 B of a store).
            if e[0] <= 1e-3:
                self.q.popleft()
                if e[4] is None:
                    done.append((e[1], e[2], e[3]))
        return done

    def __bool__(self):
        return bool(self.q)


def ring_sim(work, cfg, kind):
    """A sequential ring reduce-scatter (``kind="rs"``), the same with near-memory reduction
    (``"rs_nmc"``), or an all-gather (``"ag"``) of the output.

    N-1 synchronous steps of one chunk each; GPU 0 receives what it sends (symmetry).
    RS: DMA read, send, write into a buffer, kernel reads local + received and writes the sum.
    RS with NMC: DMA read, send, the received chunk added in memory (an update).
    AG: DMA read, send, write.
    """
    n = work.tp
    dt = max(1, cfg.step_cycles // 4)
    shape = work.shape
    total = shape.m * shape.n * cfg.gpu.elem_bytes
    chunk = -(-total // n // cfg.burst_bytes) * cfg.burst_bytes
    dram = cfg.dram()
    arb = Arbiter(policy="compute_first")
    link = cfg.ring(n).links[0]
    rd, wr = ("ag_reads", "ag_writes") if kind == "ag" else ("rs_reads", "rs_writes")
    rx_op = MemOp.UPDATE if kind == "rs_nmc" else MemOp.STORE
    now = 0.0
    for _ in range(n - 1):
        cfifo, mfifo = Fifo(), Fifo()
        to_read, dma_out, pending, arrivals = chunk, 0, chunk, deque()
        while pending > 0:
            end = now + dt
            while arrivals and arrivals[0].arrival <= now:
                d = arrivals.popleft()
                mfifo.push("rx", None, d.nbytes)
                dram.request("comm", d.nbytes, wr, op=rx_op)
            while to_read and link.queued_bytes + dma_out + cfg.packet_bytes <= cfg.tx_buffer_bytes:
                nb = min(cfg.packet_bytes, to_read)
                mfifo.push("dma", None, nb)
                dram.request("comm", nb, rd)
                dma_out += nb
                to_read -= nb
            gc, gm = dram.step(dt, arb)
            for _, _, nb in cfifo.serve(gc):
                pending -= nb // 3
            for what, _, nb in mfifo.serve(gm):
                if what == "dma":
                    dma_out -= nb
                    link.enqueue(nb, None, ready=end + dram.read_delay)
                elif kind == "rs":
                    cfifo.push("reduce", None, 3 * nb)
                    dram.request("compute", 2 * nb, rd)
                    dram.request("compute", nb, wr)
                else:
                    pending -= nb
            arrivals.extend(link.transmit(end))
            now = end
    return now, dram.traffic
