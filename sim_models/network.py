# SPDX-License-Identifier: Apache-2.0
"""Ring network of N GPUs: per-direction links with bandwidth, latency and packets.

Interpretation of the paper's "150 GB/s bidirectional per link": 150 GB/s is the sum of the
two directions, so each direction of a link carries ``link_gbs = 75`` GB/s. The ring
reduce-scatter of T3 is unidirectional (GPU ``i`` sends to GPU ``i - 1``), so it uses one
direction of each link. (``docs/paper.md`` also reports the table with 150 GB/s per
direction, the other reading.)

A :class:`Link` is one direction of one link: a FIFO of packets, each serialized at
``bytes_per_cycle`` once the link is free and the packet is ready, and delivered
``latency_cycles`` after its last byte left. A started packet always completes (no
preemption), so stepping :meth:`Link.transmit` in chunks of time gives the same deliveries as
one call. Two rings:

* :class:`RingNetwork`: links (:class:`Link`) in fractional (float) cycles, messages cut
  into packets, closed forms; the performance model's network (:mod:`sim_models.perf`),
  stepped in chunks of time.
* :class:`Ring`: the co-simulation's network (:class:`sim_models.cosim.SystemEnv`), cycle by
  cycle at the RTL's ``net_tx`` and ``net_rx`` ports: a transmit buffer per GPU (back
  pressure on ``net_tx``), arrivals rounded up to whole cycles, optional jitter and
  reordering, and the packets' data carried along. Its links serialize in exact rational
  time (:func:`link_rate`), so that :mod:`t3hw.verif.simhdl.ring`, the same ring in
  simulation-only HDL, matches it cycle for cycle.
"""

import heapq
import math
from collections import deque
from dataclasses import dataclass
from fractions import Fraction


__all__ = ["Delivery", "Link", "RingNetwork", "Ring", "link_rate", "MAX_RATE_DENOMINATOR"]

#: Largest denominator of a :class:`Ring`'s exact link rate (:func:`link_rate`).
MAX_RATE_DENOMINATOR = 10**6


@dataclass(frozen=True)
class Delivery:
    """A packet that arrived: at ``arrival`` (cycle), ``nbytes`` long, from ``src`` to ``dst``.

    ``tag`` is whatever the sender attached (the model's payload: tile id, data, address).
    """
    arrival: float
    src:     int
    dst:     int
    nbytes:  int
    tag:     object


class Link:
    """One direction of one link.

    Parameters
    ----------
    src, dst : int
        End points (GPU indices).
    bytes_per_cycle : float
        Serialization bandwidth in bytes per cycle.
    latency_cycles : float
        Time from a packet's last byte leaving to its arrival.
    """

    def __init__(self, *, src, dst, bytes_per_cycle, latency_cycles):
        if not bytes_per_cycle > 0:
            raise ValueError(f"bytes_per_cycle must be in (0, inf), not {bytes_per_cycle!r}")
        if not latency_cycles >= 0:
            raise ValueError(f"latency_cycles must be in [0, inf), not {latency_cycles!r}")
        self.src, self.dst = src, dst
        self.bytes_per_cycle = float(bytes_per_cycle)
        self.latency_cycles = float(latency_cycles)
        self.queue = deque()
        self.free_at = 0.0
        self.queued_bytes = 0
        self.sent_bytes = 0

    def enqueue(self, nbytes, tag=None, ready=0.0):
        """Queue one packet of ``nbytes``, ready to leave at cycle ``ready``."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"nbytes must be a positive integer, not {nbytes!r}")
        self.queue.append((nbytes, tag, ready))
        self.queued_bytes += nbytes

    def transmit(self, until):
        """Start every queued packet that can start before cycle ``until``; return deliveries."""
        out = []
        while self.queue:
            nbytes, tag, ready = self.queue[0]
            start = max(self.free_at, ready)
            if start >= until:
                break
            self.queue.popleft()
            self.free_at = start + nbytes / self.bytes_per_cycle
            self.queued_bytes -= nbytes
            self.sent_bytes += nbytes
            out.append(Delivery(self.free_at + self.latency_cycles, self.src, self.dst, nbytes,
                                tag))
        return out


class RingNetwork:
    """N GPUs in a ring; GPU ``i`` sends to GPU ``(i - 1) % N``.

    Parameters
    ----------
    n_gpus : int
        Ring size, at least 2.
    link_gbs : float
        Bandwidth of one direction of a link in GB/s (default 75: 150 GB/s bidirectional).
    latency_ns : float
        Link latency in ns (paper: 500).
    packet_bytes : int
        Largest packet; messages are cut into packets of this size (the last may be shorter).
    freq_ghz : float
        Clock that defines a cycle (the memory controller's, 1.4 GHz).
    """

    def __init__(self, *, n_gpus, link_gbs=75.0, latency_ns=500.0, packet_bytes=4096,
                 freq_ghz=1.4):
        if isinstance(n_gpus, bool) or not isinstance(n_gpus, int) or n_gpus < 2:
            raise ValueError(f"n_gpus must be an integer in [2, inf), not {n_gpus!r}")
        for name, value in (("link_gbs", link_gbs), ("freq_ghz", freq_ghz)):
            if not value > 0:
                raise ValueError(f"{name} must be in (0, inf), not {value!r}")
        if not latency_ns >= 0:
            raise ValueError(f"latency_ns must be in [0, inf), not {latency_ns!r}")
        if isinstance(packet_bytes, bool) or not isinstance(packet_bytes, int) or packet_bytes <= 0:
            raise ValueError(f"packet_bytes must be a positive integer, not {packet_bytes!r}")
        self.n_gpus = n_gpus
        self.link_gbs = float(link_gbs)
        self.latency_ns = float(latency_ns)
        self.packet_bytes = packet_bytes
        self.freq_ghz = float(freq_ghz)
        self.links = [Link(src=i, dst=self.next_hop(i), bytes_per_cycle=self.bytes_per_cycle,
                           latency_cycles=self.latency_cycles) for i in range(n_gpus)]

    @property
    def bytes_per_cycle(self):
        """Bytes per cycle of one direction of a link."""
        return self.link_gbs / self.freq_ghz

    @property
    def latency_cycles(self):
        """Link latency in cycles."""
        return self.latency_ns * self.freq_ghz

    def next_hop(self, src):
        """The GPU that ``src`` sends to."""
        return (src - 1) % self.n_gpus

    def packets(self, nbytes):
        """Sizes of the packets that carry a message of ``nbytes``."""
        full, rest = divmod(nbytes, self.packet_bytes)
        return [self.packet_bytes] * full + ([rest] if rest else [])

    def send(self, src, nbytes, tag=None, ready=0.0):
        """Queue a message from ``src`` to its next hop, cut into packets."""
        for size in self.packets(nbytes):
            self.links[src].enqueue(size, tag, ready)

    def transmit(self, until):
        """Advance every link to ``until``; return the deliveries, by arrival time."""
        out = [d for link in self.links for d in link.transmit(until)]
        out.sort(key=lambda d: d.arrival)
        return out

    def ring_step_cycles(self, chunk_bytes):
        """Closed form of one ring step: serialize one chunk, then one link latency."""
        return chunk_bytes / self.bytes_per_cycle + self.latency_cycles

    def reduce_scatter_cycles(self, total_bytes):
        """Closed form of a ring reduce-scatter of ``total_bytes`` per GPU.

        ``(N-1)/N * total_bytes / link bandwidth + (N-1) * latency``: N-1 steps, each one
        chunk of ``total_bytes / N`` and one latency. The ring all-gather takes the same.
        """
        n = self.n_gpus
        return (n - 1) * self.ring_step_cycles(total_bytes / n)


def link_rate(bytes_per_cycle):
    """A link's bytes per cycle as an exact :class:`~fractions.Fraction` ``P/Q``.

    A float is read as the decimal it prints as (``Fraction(str(x))``: 4.8 is 24/5, not the
    binary double nearest to it); an int or a :class:`~fractions.Fraction` is taken as it
    is. :class:`Ring` and its hardware twin serialize in whole multiples of ``1/P`` cycle
    (one byte takes ``Q/P`` cycles), so their departures are exact.

    Parameters
    ----------
    bytes_per_cycle : int, float or Fraction
        Above 0, with a denominator of at most ``10**6`` once exact.

    Returns
    -------
    Fraction

    Raises
    ------
    ValueError
        ``bytes_per_cycle`` is not a number, is not above 0, is not finite, or needs a
        denominator above ``10**6``.
    """
    value = bytes_per_cycle
    if isinstance(value, Fraction):
        rate = value
    elif isinstance(value, int) and not isinstance(value, bool):
        rate = Fraction(value)
    elif isinstance(value, float) and math.isfinite(value):
        rate = Fraction(repr(float(value)))   # repr of a float: its shortest decimal
    else:
        rate = None
    if rate is None or rate <= 0 or rate.denominator > MAX_RATE_DENOMINATOR:
        raise ValueError(f"bytes_per_cycle must be a rational number in (0, inf) with a "
                         f"denominator of at most {MAX_RATE_DENOMINATOR} (an int, a "
                         f"Fraction, or a float read as its decimal), not {value!r}")
    return rate


class Ring:
    """Unidirectional ring, cycle by cycle: GPU ``i`` sends to GPU ``i - 1`` over its own
    link (the co-simulation's network, module docstring).

    A packet taken from ``net_tx`` at cycle ``t`` waits in the transmit buffer for the link,
    is serialized at ``bytes_per_cycle`` and arrives ``latency`` cycles (plus, with
    ``jitter``, an exponential delay of that mean) after the cycle its last byte left (its
    departure rounded up to a whole cycle). Without ``reorder`` the arrivals of a link keep
    their sending order. The transmit buffer holds ``tx_bytes``: a packet's bytes stay in it
    until their last byte has left (the departure, not rounded: bytes that leave exactly at
    cycle ``c`` are gone at ``c``).

    Time is exact: the rate is the fraction ``P/Q`` of :func:`link_rate`, and a link's times
    are integers in units of ``1/P`` cycle (a byte takes ``Q`` units), so that 4.8 B per
    cycle serializes three 64-B packets in exactly 40 cycles.

    Parameters
    ----------
    n : int
        Ring size.
    rng : random.Random
        Draws the jitter (one ``expovariate`` per packet sent, only when ``jitter``).
    bytes_per_cycle : int, float or Fraction
        Link bandwidth (:func:`link_rate`).
    latency : int
        Cycles of flight.
    tx_bytes : int
        Transmit buffer of each GPU in bytes.
    jitter : int
        Mean extra flight time (0: none).
    reorder : bool
        Jittered packets may overtake each other.

    Attributes
    ----------
    rate : Fraction
        ``bytes_per_cycle`` exactly; ``rate_p``, ``rate_q`` its numerator and denominator.
    free : list of int
        Per link: when its last queued byte leaves, in units of ``1/rate_p`` cycle.
    wire : list of list
        Per destination: a heap of ``(arrival, seq, pkt, data)``.
    packets, bytes : int
        Sent so far, all GPUs.
    """

    def __init__(self, n, rng, *, bytes_per_cycle, latency, tx_bytes, jitter, reorder):
        self.n, self.rng = n, rng
        self.rate = link_rate(bytes_per_cycle)
        self.rate_p, self.rate_q = self.rate.numerator, self.rate.denominator
        self.bpc, self.latency, self.tx_bytes = bytes_per_cycle, latency, tx_bytes
        self.jitter, self.reorder = jitter, reorder
        self.free = [0] * n
        self.departures = [deque() for _ in range(n)]   # (departure in 1/P cycles, bytes)
        self.held = [0] * n                             # bytes of departures[i]
        self.last_arrival = [0] * n
        self.wire = [[] for _ in range(n)]   # per destination: heap (arrival, seq, pkt, data)
        self.seq = 0
        self.packets = 0
        self.bytes = 0

    def dst(self, i):
        """GPU ``i``'s ring neighbour, the destination of its link."""
        return (i - 1) % self.n

    def buffered(self, i, cycle):
        """Bytes in GPU ``i``'s transmit buffer at ``cycle`` (kept as a running sum)."""
        dq, now = self.departures[i], cycle * self.rate_p
        while dq and dq[0][0] <= now:
            self.held[i] -= dq.popleft()[1]
        return self.held[i]

    def tx_ready(self, i, cycle, nbytes):
        """Whether GPU ``i``'s transmit buffer takes ``nbytes`` more at ``cycle``."""
        return self.buffered(i, cycle) + nbytes <= self.tx_bytes

    def send(self, i, cycle, pkt, data):
        """GPU ``i`` sends ``pkt`` (a dict: ``device``, ``bytes``, ...) with ``data`` at
        ``cycle``; raises AssertionError if ``pkt["device"]`` is not its neighbour."""
        dst = self.dst(i)
        if pkt["device"] != dst:
            raise AssertionError(f"cycle {cycle}: GPU {i} sent {pkt} to device "
                                 f"{pkt['device']}; its ring neighbour is {dst}")
        nbytes = pkt["bytes"]
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"nbytes must be a positive integer, not {nbytes!r}")
        p = self.rate_p
        free = self.free[i] = max(self.free[i], cycle * p) + nbytes * self.rate_q
        self.departures[i].append((free, nbytes))
        self.held[i] += nbytes
        arrival = -(-free // p) + self.latency          # the departure's cycle, rounded up
        if self.jitter:                      # queueing delay: exponential, mean `jitter`
            arrival += int(self.rng.expovariate(1.0 / self.jitter))
        if not self.reorder:
            arrival = max(arrival, self.last_arrival[i])
            self.last_arrival[i] = arrival
        self.seq += 1
        heapq.heappush(self.wire[dst], (arrival, self.seq, pkt, data))
        self.packets += 1
        self.bytes += nbytes

    def arrived(self, dst, cycle):
        """The earliest packet for ``dst`` that has arrived by ``cycle`` (taken off the
        wire: it waits at the receiver's port), or None."""
        w = self.wire[dst]
        return heapq.heappop(w) if w and w[0][0] <= cycle else None

    def next_arrival(self):
        """The earliest arrival still on the wire (None: nothing on it)."""
        times = [w[0][0] for w in self.wire if w]
        return min(times) if times else None

    def empty(self):
        """Nothing on the wire."""
        return not any(self.wire)
