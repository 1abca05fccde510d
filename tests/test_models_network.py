# SPDX-License-Identifier: Apache-2.0
"""The ring network: per-direction links, packets, latency, closed forms."""

import pytest

from sim_models.network import Link, RingNetwork


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
