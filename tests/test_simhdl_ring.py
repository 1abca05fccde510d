# SPDX-License-Identifier: Apache-2.0
"""The fast co-simulation's ring (``t3hw.verif.simhdl.ring.RingHdl``) against its Python
model, :class:`sim_models.network.Ring` without jitter or reordering, as
:class:`sim_models.cosim.SystemEnv` runs it: every cycle's ``tx.ready``, ``rx.valid`` and
``rx.payload`` of every GPU, under random packets, idle stretches and long receiver
back-pressure, at several exact link rates; every packet arrives once, in order. Then the
sticky errors: a full wire, a packet to the wrong device, and bad parameters."""

import random
from fractions import Fraction

import pytest
from amaranth.hdl import Value
from amaranth.sim import Simulator

from sim_models.network import Ring
from t3hw.spec.layouts import net_packet_layout
from t3hw.verif.cosim_scenarios import REGRESSION_PARAMS as P
from t3hw.verif.simhdl.ring import RingHdl, ring_rate


LAYOUT = net_packet_layout(P)
BURST = P.burst_bytes
CYCLES = 4000               # of random traffic per run, then the ring drains
WIRE_DEPTH = CYCLES         # a link takes one packet per cycle at most: no wire overflows


def _bits(fields):
    """The packet's payload bits (the layout's fields at their offsets)."""
    return sum(fields[name] << f.offset for name, f in LAYOUT)


def _packet(rng, device):
    nbytes = rng.choice([BURST, BURST, rng.randint(1, BURST), rng.randint(1, 4)])
    fields = dict(device=device, addr=rng.randrange(1 << P.addr_width),
                  kind=rng.randrange(2), tile=rng.randrange(1 << P.tile_width), bytes=nbytes)
    return dict(fields, bits=_bits(fields))


class _Mode:
    """A random on/off process: ``on`` with probability ``p_on`` per cycle in stretches of
    up to ``on_len`` cycles, then off for up to ``off_len`` cycles."""

    def __init__(self, rng, p_on, on_len, off_len):
        self.rng, self.p_on, self.on_len, self.off_len = rng, p_on, on_len, off_len
        self.on, self.left = True, rng.randint(1, on_len)

    def __call__(self):
        if self.left == 0:
            self.on = not self.on
            self.left = self.rng.randint(1, self.on_len if self.on else self.off_len)
        self.left -= 1
        return self.on and self.rng.random() < self.p_on


def _run(seed, *, n, bpc, latency, tx_bytes, cycles):
    """Run the HDL and the model side by side for ``cycles`` of random traffic, then drain;
    return per GPU the packets sent."""
    rng = random.Random(seed)
    print(f"seed={seed} n={n} bytes_per_cycle={bpc} latency={latency} tx_bytes={tx_bytes}")
    dut = RingHdl(P, n=n, bytes_per_cycle=bpc, latency=latency, tx_bytes=tx_bytes,
                  wire_depth=WIRE_DEPTH)
    ring = Ring(n, random.Random(0), bytes_per_cycle=bpc, latency=latency, tx_bytes=tx_bytes,
                jitter=0, reorder=False)
    tx = [getattr(dut, f"tx{i}") for i in range(n)]
    rx = [getattr(dut, f"rx{i}") for i in range(n)]
    tx_pay = [Value.cast(t.payload) for t in tx]
    rx_pay = [Value.cast(r.payload) for r in rx]
    offer = [_Mode(rng, rng.choice([0.5, 0.9, 1.0]), 300, 200) for _ in range(n)]
    take = [_Mode(rng, rng.choice([0.3, 0.8, 1.0]), 200, 150) for _ in range(n)]
    sent = [[] for _ in range(n)]          # per source: packet numbers, in order
    got = [[] for _ in range(n)]           # per destination: packet numbers, in order
    stats = {"stalled_tx": 0, "stalled_rx": 0, "shared": 0,   # shared: a departure cycle
             "wire": 0}                                         # most packets on a wire
    last_due = [None] * n

    async def bench(ctx):
        offered = [None] * n
        port = [None] * n                  # the packet at the receiver's port (the model's)
        c = 0
        while c < cycles or not ring.empty() or any(port):
            assert c < cycles + 100_000, "the ring does not drain"
            ctx.set(dut.cycle, c)
            for i in range(n):
                if offered[i] is None and c < cycles and offer[i]():
                    offered[i] = _packet(rng, (i - 1) % n)
                ctx.set(tx[i].valid, offered[i] is not None)
                if offered[i] is not None:
                    ctx.set(tx_pay[i], offered[i]["bits"])
            ready = [take[d]() or c >= cycles for d in range(n)]
            for d in range(n):
                ctx.set(rx[d].ready, ready[d])
            for i in range(n):
                want = ring.tx_ready(i, c, BURST)
                assert ctx.get(tx[i].ready) == want, (c, i)
                if offered[i] is not None:
                    if want:
                        sent[i].append(ring.packets)
                        ring.send(i, c, offered[i], ring.packets)
                        offered[i] = None
                        due = -(-ring.free[i] // ring.rate_p)
                        stats["shared"] += due == last_due[i]
                        last_due[i] = due
                    else:
                        stats["stalled_tx"] += 1
            for d in range(n):
                if port[d] is None:
                    port[d] = ring.arrived(d, c)
                assert ctx.get(rx[d].valid) == (port[d] is not None), (c, d)
                if port[d] is not None:
                    assert ctx.get(rx_pay[d]) == port[d][2]["bits"], (c, d)
                    if ready[d]:
                        got[d].append(port[d][3])
                        port[d] = None
                    else:
                        stats["stalled_rx"] += 1
            stats["wire"] = max(stats["wire"], *map(len, ring.wire))
            assert ctx.get(dut.error) == 0, (c, stats)
            await ctx.tick()
            c += 1
        for i in range(n):
            assert ctx.get(getattr(dut, f"packets{i}")) == len(sent[i]), i
        assert ctx.get(dut.error) == 0
        assert ctx.get(dut.idle) == 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    for i in range(n):
        assert got[(i - 1) % n] == sent[i], i       # each packet once, in order
    assert stats["stalled_rx"] > 50, stats
    return sent, stats


@pytest.mark.parametrize("n, bpc, latency, tx_bytes", [
    (2, 4.8, 3, 2 * BURST),
    (4, 16.0, 50, 4 * BURST),
    (2, 2.5, 17, 3 * BURST + 17),
    (4, Fraction(7, 3), 30, 2 * BURST),
    (2, 64.0, 0, 4 * BURST),
    (2, Fraction(1, 3), 11, BURST),
])
def test_ring_hdl_matches_ring(n, bpc, latency, tx_bytes):
    seed = random.randrange(2**32)
    sent, stats = _run(seed, n=n, bpc=bpc, latency=latency, tx_bytes=tx_bytes, cycles=CYCLES)
    print(stats)
    assert sum(map(len, sent)) > 20 * n
    if bpc < BURST:                        # the transmit buffer fills
        assert stats["stalled_tx"] > 50, stats
    if bpc == 16:                          # backlogged small packets share a departure cycle
        assert stats["shared"] > 10, stats


def _bench(dut, body):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(body)
    sim.run()


def test_full_wire_is_a_sticky_error():
    """rx never ready, a wire of 4 packets: the fifth packet is lost (bit 0, at the cycle it
    was taken); the four held come out unchanged, and the other link is untouched."""
    dut = RingHdl(P, n=2, bytes_per_cycle=16.0, latency=3, tx_bytes=4 * BURST, wire_depth=4)
    pkts = [dict(device=1, addr=100 + k, kind=k % 2, tile=k, bytes=BURST) for k in range(6)]

    async def bench(ctx):
        taken = []
        for c in range(60):
            ctx.set(dut.cycle, c)
            ctx.set(dut.rx1.ready, 0)
            k = len(taken)
            ctx.set(dut.tx0.valid, k < len(pkts))
            if k < len(pkts):
                ctx.set(Value.cast(dut.tx0.payload), _bits(pkts[k]))
                if ctx.get(dut.tx0.ready):
                    taken.append(c)
            await ctx.tick()
        # 64 B at 16 B/cycle: packets depart every 4 cycles; the buffer takes one packet
        # per 4 cycles once full, so the fifth is taken while the wire holds four
        assert len(taken) == 6
        assert ctx.get(dut.error) == 0b0001
        assert ctx.get(dut.error_cycle) == taken[4]
        assert ctx.get(dut.packets0) == 6 and ctx.get(dut.rx0.valid) == 0
        out = []
        for c in range(60, 70):
            ctx.set(dut.cycle, c)
            ctx.set(dut.rx1.ready, 1)
            if ctx.get(dut.rx1.valid):
                out.append(ctx.get(Value.cast(dut.rx1.payload)))
            await ctx.tick()
        assert out == [_bits(p) for p in pkts[:4]]
        assert ctx.get(dut.idle) == 1 and ctx.get(dut.error) == 0b0001

    _bench(dut, bench)


def _send_three(dut, cycles, *, rx_ready=1):
    """Offer three 64-B packets from GPU 0 at the first cycles of ``cycles`` (the cycle
    numbers driven, one per clock); return the testbench's (cycle, rx1 payload) arrivals."""
    pkts = [_bits(dict(device=1, addr=k, kind=0, tile=k, bytes=BURST)) for k in range(3)]
    seen = []

    async def bench(ctx):
        for k, c in enumerate(cycles):
            ctx.set(dut.cycle, c)
            ctx.set(dut.rx1.ready, rx_ready)
            ctx.set(dut.tx0.valid, k < 3)
            if k < 3:
                ctx.set(Value.cast(dut.tx0.payload), pkts[k])
                assert ctx.get(dut.tx0.ready)
            if ctx.get(dut.rx1.valid):
                seen.append((c, ctx.get(Value.cast(dut.rx1.payload))))
            await ctx.tick()
        seen.append(("error", ctx.get(dut.error), ctx.get(dut.error_cycle)))

    _bench(dut, bench)
    return pkts, seen


def test_full_departures_fifo_is_a_sticky_error():
    """Two departure entries, three packets leaving at 13 1/3, 26 2/3 and 40 cycles: the
    third's departure is lost (bit 1, at cycle 2); every packet still arrives on time."""
    dut = RingHdl(P, n=2, bytes_per_cycle=4.8, latency=5, tx_bytes=4 * BURST, tx_depth=2)
    pkts, seen = _send_three(dut, range(60))
    assert seen == [(14 + 5, pkts[0]), (27 + 5, pkts[1]), (40 + 5, pkts[2]),
                    ("error", 0b0010, 2)]


def test_cycle_jump_is_a_sticky_error():
    """``cycle`` jumps past two departures: both fall due in one clock (bit 3)."""
    dut = RingHdl(P, n=2, bytes_per_cycle=4.8, latency=5, tx_bytes=4 * BURST)
    pkts, seen = _send_three(dut, [0, 1, 2, 100, 101], rx_ready=0)
    assert seen[-1] == ("error", 0b1000, 100)


def test_wrong_device_is_a_sticky_error():
    """A packet from GPU 2 of 4 to device 0 (its neighbour is 1): bit 2 at that cycle; the
    packet still goes."""
    dut = RingHdl(P, n=4, bytes_per_cycle=4.8, latency=5, tx_bytes=2 * BURST)

    async def bench(ctx):
        for c in range(40):
            ctx.set(dut.cycle, c)
            ctx.set(dut.rx1.ready, 1)
            ctx.set(dut.tx2.valid, c == 7)
            ctx.set(Value.cast(dut.tx2.payload), _bits(dict(device=0, addr=1, kind=0, tile=3,
                                                            bytes=BURST)))
            if c < 7:
                assert ctx.get(dut.error) == 0
            await ctx.tick()
        assert ctx.get(dut.error) == 0b0100
        assert ctx.get(dut.error_cycle) == 7
        assert ctx.get(dut.packets2) == 1 and ctx.get(dut.idle) == 1

    _bench(dut, bench)


@pytest.mark.parametrize("kwargs, match", [
    ({"n": 1}, r"n must be an integer in \[2, 8\], not 1"),
    ({"n": 9}, r"n must be an integer in \[2, 8\], not 9"),
    ({"bytes_per_cycle": 0}, r"bytes_per_cycle must be .*\(0, inf\).*1000000.*not 0"),
    ({"bytes_per_cycle": 1e-7}, r"bytes_per_cycle .*not 1e-07"),
    ({"bytes_per_cycle": "4.8"}, r"bytes_per_cycle .*not '4.8'"),
    ({"latency": -1}, r"latency must be an integer in \[0, 1048576\], not -1"),
    ({"tx_bytes": 0}, r"tx_bytes must be an integer in \[1, 16777216\], not 0"),
    ({"wire_depth": 0}, r"wire_depth must be an integer in \[1, 65536\], not 0"),
    ({"tx_depth": 2.0}, r"tx_depth must be an integer in \[1, 65536\], not 2.0"),
])
def test_bad_parameters(kwargs, match):
    args = {**dict(n=2, bytes_per_cycle=4.8, latency=3, tx_bytes=256), **kwargs}
    with pytest.raises(ValueError, match=match):
        RingHdl(P, **args)


def test_ring_rate():
    assert ring_rate(4.8) == (24, 5)
    assert ring_rate(16.0) == (16, 1)
    assert ring_rate(Fraction(7, 3)) == (7, 3)
