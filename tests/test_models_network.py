# SPDX-License-Identifier: Apache-2.0
"""The ring network: per-direction links, packets, latency, closed forms."""

import random
from fractions import Fraction

import pytest

from sim_models.network import Link, Ring, RingNetwork, link_rate


def test_defaults_are_half_of_150_gbs_bidirectional():
    net = RingNetwork(n_gpus=4)
    assert net.bytes_per_cycle == pytest.approx(75 / 1.4)
    assert net.latency_cycles == pytest.approx(700)
    assert [net.next_hop(i) for i in range(4)] == [3, 0, 1, 2]


def test_one_packet_serialization_plus_latency():
    link = Link(src=1, dst=0, bytes_per_cycle=10.0, latency_cycles=50)
    link.enqueue(1000, "a", ready=5)
    (d,) = link.transmit(1e9)
    assert (d.arrival, d.src, d.dst, d.nbytes, d.tag) == (5 + 100 + 50, 1, 0, 1000, "a")


def test_stepping_equals_one_call():
    def run(step):
        link = Link(src=0, dst=1, bytes_per_cycle=3.0, latency_cycles=7)
        for i in range(20):
            link.enqueue(100 + i, i, ready=i * 11)
        out, t = [], 0
        while link.queue:
            t += step
            out += link.transmit(t)
        return [(d.arrival, d.tag) for d in out]
    assert run(1) == run(13) == run(10**6)


def test_packets_and_fifo_back_to_back():
    net = RingNetwork(n_gpus=2, link_gbs=1.4, latency_ns=0, packet_bytes=64)   # 1 B/cycle
    assert net.packets(200) == [64, 64, 64, 8]
    net.send(0, 200)
    arrivals = [d.arrival for d in net.transmit(1e9)]
    assert arrivals == [64, 128, 192, 200]


def test_ring_closed_form():
    net = RingNetwork(n_gpus=8)
    total = 8 * 2**20
    expect = 7 / 8 * total / (75 / 1.4) + 7 * 700
    assert net.reduce_scatter_cycles(total) == pytest.approx(expect)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_gpus": 1}, "n_gpus"), ({"n_gpus": 4, "link_gbs": 0}, "link_gbs"),
    ({"n_gpus": 4, "latency_ns": -1}, "latency_ns"), ({"n_gpus": 4, "packet_bytes": 0}, "packet_bytes"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RingNetwork(**kwargs)


def test_bad_packet():
    link = Link(src=0, dst=1, bytes_per_cycle=1.0, latency_cycles=0)
    with pytest.raises(ValueError, match="nbytes"):
        link.enqueue(0)


@pytest.mark.parametrize("value, rate", [
    (4.8, Fraction(24, 5)), (16.0, Fraction(16)), (2.5, Fraction(5, 2)), (3, Fraction(3)),
    (Fraction(7, 3), Fraction(7, 3)), (0.1, Fraction(1, 10)), (1e-6, Fraction(1, 10**6)),
])
def test_link_rate_is_the_printed_decimal(value, rate):
    assert link_rate(value) == rate


@pytest.mark.parametrize("value", [0, -4.8, 0.0, float("nan"), float("inf"), True, "4.8",
                                   None, 1e-7, 75 / 1.4, Fraction(1, 10**6 + 1)])
def test_link_rate_bad(value):
    with pytest.raises(ValueError, match=r"bytes_per_cycle must be .*\(0, inf\).*10*00000"):
        link_rate(value)


def _ring(bpc, latency=100, tx_bytes=4096):
    return Ring(2, random.Random(0), bytes_per_cycle=bpc, latency=latency,
                tx_bytes=tx_bytes, jitter=0, reorder=False)


def _pkt(nbytes, device=1):
    return {"device": device, "bytes": nbytes}


def test_ring_departures_are_exact_at_integer_cycles():
    # 4.8 B/cycle: three 64-B packets (13 1/3 cycles each) leave at exactly cycle 40
    ring = _ring(4.8)
    for c in range(3):
        assert ring.tx_ready(0, c, 64)
        ring.send(0, c, _pkt(64), None)
    assert [a for a, *_ in sorted(ring.wire[1])] == [14 + 100, 27 + 100, 40 + 100]
    assert ring.buffered(0, 39) == 64
    assert ring.buffered(0, 40) == 0
    assert ring.next_arrival() == 114
    assert ring.arrived(1, 139)[0] == 114 and ring.arrived(1, 139)[0] == 127
    assert ring.arrived(1, 139) is None and ring.arrived(1, 140)[0] == 140 and ring.empty()


def test_ring_exact_where_floats_round_up():
    # fifteen 8-B packets at 4.8 B/cycle end at 25 cycles; the float sum is 25.000000000000004
    ring = _ring(4.8, latency=0)
    for c in range(15):
        ring.send(0, c, _pkt(8), c)
    assert max(a for a, *_ in ring.wire[1]) == 25
    assert ring.buffered(0, 24) == 8 and ring.buffered(0, 25) == 0
    got = []
    for c in range(26):
        while (d := ring.arrived(1, c)) is not None:
            got.append(d[3])
    assert got == list(range(15)) and ring.empty()
    assert (ring.packets, ring.bytes) == (15, 120)


def test_ring_idle_link_starts_at_the_sending_cycle():
    ring = _ring(Fraction(16), latency=3, tx_bytes=64)
    ring.send(0, 10, _pkt(64), None)                 # leaves at 14, arrives at 17
    assert not ring.tx_ready(0, 13, 1) and ring.tx_ready(0, 14, 64)
    assert ring.arrived(1, 16) is None and ring.arrived(1, 17)[0] == 17


def test_ring_wrong_device_and_bad_rate():
    with pytest.raises(AssertionError, match="ring neighbour is 1"):
        _ring(4.8).send(0, 0, _pkt(64, device=0), None)
    with pytest.raises(ValueError, match="not 0"):
        _ring(0)
