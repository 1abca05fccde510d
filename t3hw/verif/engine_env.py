# SPDX-License-Identifier: Apache-2.0
"""One engine in a loop: a 2-GPU-equivalent ring reduce-scatter plus all-gather copy, run on
the engine's RTL with a Python DRAM stub and a loopback network.

The loopback makes the engine its own ring neighbour (GPU 1): whatever it sends to device 1
comes back on its own ``net_rx``. Two windows of its memory play the two GPUs' chunk
buffers, so one engine exercises every path of the mechanism:

=========  ==========  =======================================================================
window     mode        role
=========  ==========  =======================================================================
``X0``     TRACKED     chunk 0 at its owner: the local partial ``P0`` is stored here as updates
``W0``     REMOTE      the peer's partial ``Q0``: stored here, sent as updates, lands in ``X0``
``X1``     REMOTE      the local partial ``P1`` of chunk 1: sent as updates, lands in ``Y1``
``Y1``     TRACKED     chunk 1 at its owner: the peer's partial ``Q1`` is stored here locally
``Z``      LOCAL       the all-gather copies: each completed tile of ``X0`` and ``Y1`` is sent
                       (DMA, ``STORE``) to ``Z0`` / ``Z1`` on device 1, which lands here
=========  ==========  =======================================================================

Each tracked tile (of ``X0`` and ``Y1``) has threshold ``2 * bursts per tile``: its local
updates plus its incoming ones. A tile's DMA may only start when both partials are in, so
every DMA packet must carry exactly ``P + Q`` of its burst, and ``Z`` must end as
``[P0 + Q0, P1 + Q1]``. A trigger one write early sends a burst without one contribution,
which the data check catches. Tiles are 2-D (``rows`` rows of ``row_bytes``, ``pitch``
apart: column blocks of a row-major chunk), so the descriptors walk strided rows.

Data stays in Python (``DESIGN.md``): the RTL carries addresses, tile ids, lengths and tags;
the DRAM stub moves float32 values (small integers, so sums are exact) when the RTL's
requests are served, in order, after a fixed latency; reads snapshot memory when served.

:class:`EngineEnv` also sends random GPU reads (``load``), checks every read returns once
with its tag, and checks every packet on ``net_tx`` against the list of expected packets
built from the scenario alone (not from the RTL): the remote-store packets, and each
descriptor's bursts in walk order with their reduced data.
"""

from collections import deque

import numpy as np

from t3hw.spec.layouts import (Codec, MemOp, RegionMode, WriteKind, WriteSource, load_layout,
                          load_response_layout, mem_request_layout, mem_response_layout,
                          net_packet_layout, store_layout)

from sim_models.dma import walk
from .env import Stall, StreamEnv


__all__ = ["LoopScenario", "EngineEnv", "run"]

_DTYPE = np.dtype(np.float32)


class LoopScenario:
    """The windows, tiles, partials and the programming of the loop scenario.

    Parameters
    ----------
    params : EngineParams
    rng : numpy Generator
    tiles : int
        Tiles per chunk (the tracker arms ``2 * tiles`` entries).
    rows, row_bursts : int
        A tile is ``rows`` rows of ``row_bursts * burst_bytes`` bytes.
    remote : bool
        False: no partial crosses the network before the DMA, each tracked tile holds only
        its local partial (``P0`` in ``X0``, ``Q1`` in ``Y1``, threshold ``bursts per tile``),
        so every tile completes from local stores alone, even with the link held.
    waves : int
        Waves of tiles mapped onto the same tracker entries and DMA descriptors, one after
        the other (software maps wave ``w + 1`` as wave ``w``'s entries free up): wave ``w``'s
        tile ``j`` is column block ``w * tiles + j`` of its chunk, sent to the same block of
        ``Z``, with the tracker tile id and descriptor index of tile ``j``.
    """

    def __init__(self, params, rng, *, tiles=4, rows=2, row_bursts=2, remote=True, waves=1):
        p = params
        self.p, self.tiles, self.rows, self.remote = p, tiles, rows, remote
        if isinstance(waves, bool) or not isinstance(waves, int) or waves < 1:
            raise ValueError(f"waves must be an integer in [1, inf), not {waves!r}")
        self.waves = waves
        self.row_bytes = row_bursts * p.burst_bytes
        # a chunk is rows x (waves x tiles) column blocks
        self.pitch = waves * tiles * self.row_bytes
        self.chunk_bytes = rows * self.pitch
        self.bursts_per_tile = rows * row_bursts
        most = min(p.tracker_entries, p.dma_descriptors) // 2
        if not 1 <= tiles <= most:
            raise ValueError(f"tiles must be in [1, {most}], not {tiles!r}")
        self.threshold = (2 if remote else 1) * self.bursts_per_tile
        if self.threshold > p.max_threshold:
            raise ValueError(f"a tile's threshold {self.threshold} must be at most "
                             f"{p.max_threshold}")
        span = 1 << max(self.chunk_bytes - 1, 1).bit_length()  # window stride: power of two
        base = {name: (i + 1) * span for i, name in enumerate(("X0", "W0", "X1", "Y1", "Z"))}
        if base["Z"] + 2 * span > 1 << p.addr_width:
            raise ValueError(f"addr_width={p.addr_width} is too small for {tiles} tiles of "
                             f"{rows} x {self.row_bytes} bytes")
        self.base, self.span = base, span
        self.z = {0: base["Z"], 1: base["Z"] + span}         # Z0, Z1
        elems = self.chunk_bytes // _DTYPE.itemsize
        self.partial = {name: rng.integers(-64, 64, elems).astype(_DTYPE)
                        for name in ("P0", "Q0", "P1", "Q1")}
        self.mem_bytes = base["Z"] + 2 * span

    # -- geometry --------------------------------------------------------------------------
    def tile_offsets(self, j, wave=0):
        """Byte offsets in a chunk of the bursts of wave ``wave``'s tile ``j``, in walk
        order."""
        col = (wave * self.tiles + j) * self.row_bytes
        return [r * self.pitch + col + c
                for r in range(self.rows) for c in range(0, self.row_bytes, self.p.burst_bytes)]

    def wave_of(self, chunk, addr):
        """The wave whose column block of chunk ``chunk`` (of ``X0``/``Y1``, or of ``Z``)
        holds ``addr``."""
        base = self.z[chunk] if addr >= self.base["Z"] else self.base["X0" if chunk == 0
                                                                      else "Y1"]
        return (addr - base) % self.pitch // self.row_bytes // self.tiles

    def tile_id(self, chunk, j):
        """Tracker tile id of tile ``j`` of chunk 0 (``X0``) or chunk 1 (``Y1``)."""
        return chunk * self.tiles + j

    def regions(self):
        """``(mode, base, size, device, remote_base)`` of every region."""
        b, s = self.base, self.chunk_bytes
        if not self.remote:
            return [(RegionMode.TRACKED, b["X0"], s, 0, 0),
                    (RegionMode.TRACKED, b["Y1"], s, 0, 0),
                    (RegionMode.LOCAL,   b["Z"],  2 * self.span, 0, 0)]
        return [(RegionMode.TRACKED, b["X0"], s, 0, 0),
                (RegionMode.REMOTE,  b["W0"], s, 1, b["X0"]),
                (RegionMode.REMOTE,  b["X1"], s, 1, b["Y1"]),
                (RegionMode.TRACKED, b["Y1"], s, 0, 0),
                (RegionMode.LOCAL,   b["Z"],  2 * self.span, 0, 0)]

    def descriptors(self, wave=0):
        """``(tile id, threshold, descriptor fields)`` of every tracked tile of wave
        ``wave``."""
        out = []
        for chunk, src in ((0, self.base["X0"]), (1, self.base["Y1"])):
            for j in range(self.tiles):
                off = (wave * self.tiles + j) * self.row_bytes
                out.append((self.tile_id(chunk, j), self.threshold, dict(
                    src=src + off, rows=self.rows, row_bytes=self.row_bytes, pitch=self.pitch,
                    device=1, dst=self.z[chunk] + off, op=WriteKind.STORE,
                    tile=self.tile_id(chunk, j))))
        return out

    def stores(self, rng, wave=0):
        """The producer stores ``(addr, tile, data)`` of wave ``wave``, one per burst, in a
        random order."""
        b, burst = self.base, self.p.burst_bytes
        n = burst // _DTYPE.itemsize
        out = []
        parts = ((("P0", "X0", 0), ("Q0", "W0", 0), ("P1", "X1", 1), ("Q1", "Y1", 1))
                 if self.remote else (("P0", "X0", 0), ("Q1", "Y1", 1)))
        for part, window, chunk in parts:
            for j in range(self.tiles):
                for off in self.tile_offsets(j, wave):
                    e = off // _DTYPE.itemsize
                    out.append((b[window] + off, self.tile_id(chunk, j),
                                self.partial[part][e:e + n]))
        order = rng.permutation(len(out))
        return [out[i] for i in order]

    def expected_packets(self):
        """Every packet ``net_tx`` must carry: ``(device, addr, kind, tile, bytes, data)``."""
        b, burst = self.base, self.p.burst_bytes
        n = burst // _DTYPE.itemsize
        out = []
        sent = (("W0", "X0", 0, "Q0"), ("X1", "Y1", 1, "P1")) if self.remote else ()
        for wave in range(self.waves):
            for window, dest, chunk, part in sent:
                for j in range(self.tiles):
                    for off in self.tile_offsets(j, wave):
                        e = off // _DTYPE.itemsize
                        out.append((1, b[dest] + off, WriteKind.UPDATE.value,
                                    self.tile_id(chunk, j), burst,
                                    tuple(self.partial[part][e:e + n])))
            out += self.descriptor_packets(wave)
        return out

    def descriptor_packets(self, wave, tiles=None):
        """The DMA packets of wave ``wave`` (of ``tiles`` only, if given), as
        :meth:`expected_packets` gives them."""
        out = []
        for tile, _, d in self.descriptors(wave):
            if tiles is not None and tile not in tiles:
                continue
            chunk = tile // self.tiles
            total = self.final_z()[chunk]
            src0 = self.base["X0" if chunk == 0 else "Y1"]
            for src, dst, nbytes in walk(self.p, d):
                e = (src - src0) // _DTYPE.itemsize
                out.append((1, dst, WriteKind.STORE.value, tile, nbytes,
                            tuple(total[e:e + nbytes // _DTYPE.itemsize])))
        return out

    def final_z(self):
        """What ``Z0`` and ``Z1`` must hold at the end."""
        if not self.remote:
            return {0: self.partial["P0"], 1: self.partial["Q1"]}
        return {c: self.partial[f"P{c}"] + self.partial[f"Q{c}"] for c in (0, 1)}


class EngineEnv(StreamEnv):
    """Drives the engine's data ports through the loop scenario and scores them.

    Parameters
    ----------
    params : EngineParams
    rng : random.Random
    scenario : LoopScenario
    loads : int
        Random GPU reads interleaved with the stores.
    stall : float
        Back-pressure burst rate on ``dram``, ``load_response`` and ``net_tx``.
    latency : int
        DRAM latency in cycles (a request is served ``latency`` cycles after it was taken,
        in order, one per cycle).
    net_delay : (int, int)
        Loopback delay range in cycles (in order: one link).
    hold : dict, optional
        ``{output stream: (first cycle, last cycle)}``: its ``ready`` is held low over those
        cycles (``net_tx``: the link; ``dram``: the DRAM), whatever the random stalls.
    bad_rx : list of dict, optional
        Packets (``net_packet_layout`` fields) the engine must refuse, put on ``net_rx``
        among the scenario's own: nothing of theirs may reach the DRAM.
    bad_stores : list of dict, optional
        Producer stores (``store_layout`` fields) the engine must refuse, given among the
        scenario's own.
    fault : (str, int), optional
        ``("error", tile)`` or ``("tag", tile)``: the DRAM answers the first DMA read of
        wave 0's descriptor of ``tile`` with its ``error`` bit set, or with a wrong tag. The
        DMA must abort that descriptor: none of its packets may leave, and ``Z`` keeps 0 in
        its block; everything else stays exact.

    Stores of waves after the first (``scenario.waves``) are held back until
    :meth:`release` gives a tile's (software has mapped its entry again).
    """

    in_streams  = ("store", "load", "dram_response", "net_rx")
    out_streams = ("dram", "load_response", "net_tx")
    in_flags    = ("occupancy",)

    def __init__(self, params, rng, scenario, *, loads=200, stall=0.1, latency=12,
                 net_delay=(3, 20), hold=None, bad_rx=(), bad_stores=(), fault=None):
        super().__init__()
        self.hold = dict(hold or {})
        self.bad_rx, self.refused = list(bad_rx), {"rx": 0, "store": 0}
        self.p, self.rng, self.sc = params, rng, scenario
        self.codec = {n: Codec(f(params)) for n, f in (
            ("store", store_layout), ("load", load_layout), ("dram", mem_request_layout),
            ("dram_response", mem_response_layout), ("load_response", load_response_layout),
            ("net", net_packet_layout))}
        self.mem = np.zeros(scenario.mem_bytes // _DTYPE.itemsize, _DTYPE)
        self.stores = deque((addr, tile, data, params.burst_bytes) for addr, tile, data
                            in scenario.stores(np.random.default_rng(rng.getrandbits(32))))
        self.later = {}                      # tile -> stores of later waves, not released
        for wave in range(1, scenario.waves):
            for addr, tile, data in scenario.stores(
                    np.random.default_rng(rng.getrandbits(32)), wave):
                self.later.setdefault(tile, []).append((addr, tile, data, params.burst_bytes))
        for fields in bad_stores:           # data None: the engine must refuse it
            self.stores.insert(rng.randrange(len(self.stores) + 1),
                               (fields["addr"], fields["tile"], None, fields["bytes"]))
        self.loads_left, self.latency, self.net_delay = loads, latency, net_delay
        self.loads_issued = 0
        self.stall = {n: Stall(rng, stall, 8) for n in ("dram", "load_response", "net_tx")}
        self.store = self.load = None
        self.next_tag = 0
        self.loads_out = {}                  # tag -> count outstanding
        self.local_data = deque()            # data of local stores, in order
        self.remote_data = deque()           # data of remote stores, in order (net_tx)
        self.rx_data = deque()               # data of packets given to net_rx, in order
        self.dma_data = {}                   # source address -> snapshots of DMA reads served
        self.queue = deque()                 # DRAM: (due cycle, request, data)
        self.responses = deque()             # DRAM responses waiting for their port
        self.wire = deque()                  # loopback: (arrival cycle, packet, data)
        self.rx = None
        self.expected = {}
        for pkt in scenario.expected_packets():
            self.expected[pkt] = self.expected.get(pkt, 0) + 1
        self.packets = []                    # every packet seen on net_tx, in order
        self.dma_order = {}                  # tile -> destination addresses in arrival order
        self.served = {"read": 0, "store": 0, "update": 0}
        self._dma_dst = {(d["tile"], w): d for w in range(scenario.waves)
                         for _, _, d in scenario.descriptors(w)}
        self._src_of = {dst: src for d in self._dma_dst.values()
                        for src, dst, _ in walk(params, d)}
        self._regions = scenario.regions()
        self.fault, self.aborted = None, None
        self._aborted_srcs = set()           # source addresses of the aborted descriptor
        if fault is not None:
            kind, tile = fault
            if kind not in ("error", "tag"):
                raise ValueError(f"fault kind must be 'error' or 'tag', not {kind!r}")
            d = self._dma_dst[(tile, 0)]
            self.fault = (kind, tile, d["src"])

    # -- helpers ---------------------------------------------------------------------------
    def _local(self, addr):
        """Whether a producer store to ``addr`` stays local (by the scenario's regions)."""
        for mode, base, size, _, _ in self._regions:
            if base <= addr < base + size:
                return mode != RegionMode.REMOTE
        return True

    def _ready(self, name):
        first, last = self.hold.get(name, (1, 0))
        ready = self.stall[name].ready()
        return ready and not first <= self.cycle <= last

    def _is_dma_packet(self, pkt):
        return pkt["addr"] >= self.sc.base["Z"]

    def release(self, tile):
        """Software has mapped ``tile``'s entry for the next wave: its stores may go,
        mixed at random among the stores still to give."""
        for item in self.later.pop(tile, ()):
            self.stores.insert(self.rng.randrange(len(self.stores) + 1), item)

    # -- stimulus --------------------------------------------------------------------------
    def inputs(self):
        rng, p = self.rng, self.p
        if self.store is None and self.stores and rng.random() < 0.7:
            addr, tile, data, nbytes = self.stores.popleft()
            self.store = (dict(addr=addr, tile=tile, bytes=nbytes, kind=WriteKind.UPDATE.value),
                          data)
        if self.load is None and self.loads_left and rng.random() < 0.3:
            tag = self.next_tag
            self.next_tag = (tag + 1) % (1 << p.load_tag_width)
            self.load = dict(addr=rng.randrange(0, self.sc.mem_bytes, p.burst_bytes),
                             bytes=p.burst_bytes, tag=tag)
        if self.rx is None and self.bad_rx and rng.random() < 0.01:
            self.rx = (self.bad_rx.pop(), None)     # data None: the engine must refuse it
        if self.rx is None and self.wire and self.wire[0][0] <= self.cycle:
            _, pkt, data = self.wire.popleft()
            self.rx = (pkt, data)
        rsp = self.responses[0] if self.responses else None
        return {
            "store": None if self.store is None else self.codec["store"].pack(**self.store[0]),
            "load": None if self.load is None else self.codec["load"].pack(**self.load),
            "dram_response": None if rsp is None else self.codec["dram_response"].pack(**rsp),
            "net_rx": None if self.rx is None else self.codec["net"].pack(**self.rx[0]),
            "dram": self._ready("dram"),
            "load_response": self._ready("load_response"),
            "net_tx": self._ready("net_tx"),
            "occupancy": min(len(self.queue), (1 << p.occupancy_width) - 1),
        }

    # -- the models around the engine, and the scoreboard ----------------------------------
    def check(self, outs):
        ins, cyc = self._ins, self.cycle
        if self.store is not None and outs["store"]:
            fields, data = self.store
            if data is None:
                self.refused["store"] += 1
            else:
                (self.local_data if self._local(fields["addr"])
                 else self.remote_data).append(data)
            self.store = None
        if self.load is not None and outs["load"]:
            self.loads_out[self.load["tag"]] = self.loads_out.get(self.load["tag"], 0) + 1
            self.load, self.loads_left = None, self.loads_left - 1
            self.loads_issued += 1
        if self.rx is not None and outs["net_rx"]:
            if self.rx[1] is None:
                self.refused["rx"] += 1
            else:
                self.rx_data.append(self.rx[1])
            self.rx = None
        if self.responses and outs["dram_response"]:
            self.responses.popleft()
        # DRAM: take a request, serve the oldest one that is due
        if outs["dram"] is not None and ins["dram"]:
            req = self.codec["dram"].unpack(outs["dram"])
            data = None
            if req["op"] != MemOp.READ.value:
                src = self.local_data if req["source"] == WriteSource.COMPUTE.value \
                    else self.rx_data
                assert src, f"cycle {cyc}: a write {req} with no store or packet behind it"
                data = src.popleft()
                assert req["bytes"] == data.nbytes, (cyc, req, data)
            self.queue.append((cyc + self.latency, req, data))
        if self.queue and self.queue[0][0] <= cyc:
            _, req, data = self.queue.popleft()
            e = req["addr"] // _DTYPE.itemsize
            if req["op"] == MemOp.READ.value:
                self.served["read"] += 1
                rsp = {"source": req["source"], "tag": req["tag"], "error": 0}
                if req["source"] == WriteSource.DMA.value:
                    if self.fault is not None and req["addr"] == self.fault[2]:
                        self._abort(rsp)
                    else:
                        self.dma_data.setdefault(req["addr"], deque()).append(
                            self.mem[e:e + req["bytes"] // _DTYPE.itemsize].copy())
                self.responses.append(rsp)
            elif req["op"] == MemOp.STORE.value:
                self.served["store"] += 1
                self.mem[e:e + data.size] = data
            else:
                self.served["update"] += 1
                self.mem[e:e + data.size] += data
        # load responses: each tag once per read
        if outs["load_response"] is not None and ins["load_response"]:
            tag = self.codec["load_response"].unpack(outs["load_response"])["tag"]
            assert self.loads_out.get(tag), f"cycle {cyc}: load response tag {tag} not issued"
            self.loads_out[tag] -= 1
        # network: check each packet, loop it back
        if outs["net_tx"] is not None and ins["net_tx"]:
            pkt = self.codec["net"].unpack(outs["net_tx"])
            dma = self._is_dma_packet(pkt)
            src = self.dma_data.get(self._src_of.get(pkt["addr"])) if dma else self.remote_data
            assert src, f"cycle {cyc}: packet {pkt} with no data behind it"
            data = src.popleft()
            key = (pkt["device"], pkt["addr"], pkt["kind"], pkt["tile"], pkt["bytes"],
                   tuple(data))
            assert self.expected.get(key), \
                f"cycle {cyc}: unexpected packet {pkt} data {data} (early trigger?)"
            self.expected[key] -= 1
            self.packets.append(pkt)
            if dma:
                wave = self.sc.wave_of(pkt["tile"] // self.sc.tiles, pkt["addr"])
                self.dma_order.setdefault((pkt["tile"], wave), []).append(pkt["addr"])
            lo, hi = self.net_delay
            self.wire.append((cyc + self.rng.randint(lo, hi), pkt, data))

    def done(self):
        """Every stimulus given and drained: a store or packet the engine has taken but not
        yet written to DRAM still holds its data in ``local_data``/``remote_data``/``rx_data``
        (a packet accepted on ``net_rx`` can sit in the engine's queues for a while); every
        load the engine took answered (it may still be inside the engine when the last packet
        leaves)."""
        return (not self.stores and self.store is None and not self.loads_left
                and not any(self.loads_out.values())
                and not self.bad_rx and not self.later
                and self.load is None and not self.queue and not self.responses
                and not self.wire and self.rx is None
                and not self.local_data and not self.remote_data and not self.rx_data
                and not any(q for src, q in self.dma_data.items()
                            if src not in self._aborted_srcs)
                and sum(self.expected.values()) == 0)

    def _abort(self, rsp):
        """Answer the faulted read badly: its descriptor's packets are no longer expected
        (none may leave), and the snapshots of its other reads are never used."""
        kind, tile, _ = self.fault
        if kind == "error":
            rsp["error"] = 1
        else:
            rsp["tag"] ^= 1
        self.fault, self.aborted = None, (tile, 0)
        self._aborted_srcs = {src for src, _, _ in walk(self.p, self._dma_dst[(tile, 0)])}
        for key in self.sc.descriptor_packets(0, tiles={tile}):
            self.expected[key] -= 1
            if not self.expected[key]:
                del self.expected[key]


    def check_end(self):
        """Every expected packet seen, each descriptor's in walk order; ``Z`` reduced."""
        missing = {k: v for k, v in self.expected.items() if v}
        assert not missing, f"{len(missing)} packets never sent"
        assert not any(self.loads_out.values()), "load responses missing"
        assert self.fault is None, "the faulted DMA read was never served"
        for (tile, wave), addrs in self.dma_order.items():
            d = self._dma_dst[(tile, wave)]
            assert addrs == [dst for _, dst, _ in walk(self.p, d)], \
                f"tile {tile} wave {wave}: packets out of walk order"
        assert self.aborted not in self.dma_order, f"aborted {self.aborted} sent packets"
        for chunk, want in self.sc.final_z().items():
            want = want.copy()
            if self.aborted is not None and self.aborted[0] // self.sc.tiles == chunk:
                for _, dst, nbytes in walk(self.p, self._dma_dst[self.aborted]):
                    e = (dst - self.sc.z[chunk]) // _DTYPE.itemsize
                    want[e:e + nbytes // _DTYPE.itemsize] = 0    # never written
            e = self.sc.z[chunk] // _DTYPE.itemsize
            got = self.mem[e:e + want.size]
            assert np.array_equal(got, want), f"Z{chunk} differs from P{chunk} + Q{chunk}"


async def run(env, cycle, *, limit=2_000_000):
    """Run until :meth:`EngineEnv.done`, then :meth:`EngineEnv.check_end`, then one idle
    cycle (every input's ``valid`` low)."""
    for _ in range(limit):
        await cycle()
        if env.done():
            env.check_end()
            # One more cycle, with nothing to give: every input stream's valid goes low, so
            # the register accesses that follow do not see the last input again.
            await cycle()
            return
    raise AssertionError(f"not done after {limit} cycles (cycle {env.cycle}); "
                         f"{sum(env.expected.values())} packets missing, "
                         f"{len(env.stores)} stores left")


def reference_run(scenario):
    """The loop scenario on the reference engine (:class:`sim_models.engine_model.EngineModel`
    over a functional :class:`~sim_models.dram.DramModel`), with the same loopback: returns
    ``(packets, z)``, the packets sent as ``expected_packets`` tuples and ``{chunk: Z
    contents}``. Packets are delivered as soon as they are sent and the DMA runs whenever a
    trigger is pending, so this checks the scenario's expectations against the model's
    semantics, independently of any timing."""
    from sim_models.dram import DramModel
    from sim_models.engine_model import DmaDescriptor, EngineModel, Region

    p = scenario.p
    if scenario.waves != 1:
        raise ValueError(f"reference_run runs one wave, not {scenario.waves}")
    dram = DramModel(size_bytes=scenario.mem_bytes)
    eng = EngineModel(device=0, dram=dram, params=p, burst_bytes=p.burst_bytes, dtype=_DTYPE)
    names = {RegionMode.LOCAL: "local", RegionMode.REMOTE: "remote",
             RegionMode.TRACKED: "tracked"}
    for mode, base, size, device, remote_base in scenario.regions():
        eng.addrmap.add(Region(base, size, names[mode], device, remote_base))
    for tile, threshold, d in scenario.descriptors():
        eng.program(tile, DmaDescriptor(src=d["src"], rows=d["rows"], row_bytes=d["row_bytes"],
                                        pitch=d["pitch"], dest_device=d["device"],
                                        dest_addr=d["dst"], op=d["op"], dest_tile=d["tile"]))
        eng.tracker.arm(tile, threshold, tile)
    sent = []

    def deliver(packets):
        for pkt in packets:
            sent.append((pkt.dest, pkt.addr, pkt.op.value, pkt.tile, pkt.data.nbytes,
                         tuple(pkt.data)))
            eng.receive(pkt)

    for addr, tile, data in scenario.stores(np.random.default_rng(0)):
        deliver(eng.store(addr, data, tile=tile))
        while eng.ready:
            deliver(eng.run_dma())
    z = {c: dram.mem[scenario.z[c]:scenario.z[c] + scenario.chunk_bytes].view(_DTYPE).copy()
         for c in (0, 1)}
    return sent, z
