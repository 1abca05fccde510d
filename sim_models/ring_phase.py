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
    RS, as NCCL's and RCCL's ring kernels run it (``send``, then ``recvReduceSend`` at
    every step but the last, ``recvReduceCopy`` at the last): the first step reads the
    local chunk and sends it; the received chunk is written into a buffer by the sender;
    the kernel reads it and the local chunk, and sends the sum on in the next step without
    writing it, or writes it at the last step. Per GPU that is ``2N - 1`` chunk reads and
    ``N`` chunk writes.
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
    for step in range(n - 1):
        cfifo, mfifo = Fifo(), Fifo()
        to_read, dma_out, pending, arrivals = chunk, 0, chunk, deque()
        # The reduction kernel's sum of the step before leaves from its registers.
        from_kernel = kind == "rs" and step > 0
        # Per received byte, the kernel reads 2 (local, received) and writes 1 at the last.
        passes = 3 if step == n - 2 else 2
        while pending > 0:
            end = now + dt
            while arrivals and arrivals[0].arrival <= now:
                d = arrivals.popleft()
                mfifo.push("rx", None, d.nbytes)
                dram.request("comm", d.nbytes, wr, op=rx_op)
            while to_read and link.queued_bytes + dma_out + cfg.packet_bytes <= cfg.tx_buffer_bytes:
                nb = min(cfg.packet_bytes, to_read)
                to_read -= nb
                if from_kernel:
                    link.enqueue(nb, None, ready=now)
                    continue
                mfifo.push("dma", None, nb)
                dram.request("comm", nb, rd)
                dma_out += nb
            gc, gm = dram.step(dt, arb)
            for _, cost, nb in cfifo.serve(gc):
                pending -= nb // cost
            for what, _, nb in mfifo.serve(gm):
                if what == "dma":
                    dma_out -= nb
                    link.enqueue(nb, None, ready=end + dram.read_delay)
                elif kind == "rs":
                    cfifo.push("reduce", passes, passes * nb)
                    dram.request("compute", 2 * nb, rd)
                    if passes == 3:
                        dram.request("compute", nb, wr)
                else:
                    pending -= nb
            arrivals.extend(link.transmit(end))
            now = end
    return now, dram.traffic
