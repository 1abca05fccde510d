# SPDX-License-Identifier: Apache-2.0
"""The fast co-simulation's data replay (:mod:`t3hw.verif.cosim_replay`) on hand-made logs:
it applies the writes a DRAM served with the data the exact mode would attach, counts the
traffic classes as :class:`sim_models.dram.NmcDram` does, and refuses a log the exact mode
would refuse (a write with no data behind it, data of the wrong size, an access outside the
memory). The whole-run equivalence with the exact mode is ``cocotb_tests/test_cosim.py``'s."""

import numpy as np
import pytest

from sim_models.collective import Plan
from t3hw.spec.layouts import MemOp, RegionMode, WriteKind, WriteSource
from t3hw.verif.cosim_replay import read_log, replay
from t3hw.verif.cosim_scenarios import small


READ, STORE, UPDATE = MemOp.READ.value, MemOp.STORE.value, MemOp.UPDATE.value
COMPUTE, DMA, REMOTE = (WriteSource.COMPUTE.value, WriteSource.DMA.value,
                        WriteSource.REMOTE.value)


def _local_stores(plan, gpu, tile):
    """The stores of ``tile`` at ``gpu`` that go to its own memory (not a REMOTE region)."""
    regions = plan.regions(gpu)
    out = []
    for addr, _, data in plan.tile_stores(gpu, tile):
        mode = next(m for m, b, s, _, _ in regions if b <= addr < b + s)
        if mode != RegionMode.REMOTE:
            out.append((addr, data))
    return out


def _end(loads=(0, 0)):
    """The records the shell writes at the end of a run: each GPU's GEMM load bytes."""
    return [(2, gpu, 0, 0, 0, 0, n) for gpu, n in enumerate(loads)]


def _log(tmp_path, rows):
    """A log as the shell writes it: seven little-endian int64s per record."""
    path = tmp_path / "log.bin"
    path.write_bytes(np.array(rows, dtype="<i8").reshape(-1, 7).tobytes())
    return path


def _setup():
    cfg = small(2)
    plan = Plan(cfg)
    # the first tile of GPU 0's order whose stores stay local (its first chunk is sent on)
    tile = next(t for t in plan.producers[0].order() if _local_stores(plan, 0, t))
    return cfg, plan, tile, _local_stores(plan, 0, tile)


def test_local_stores_land_and_are_counted(tmp_path):
    cfg, plan, tile, stores = _setup()
    rows = [(0, 0, c, UPDATE, COMPUTE, addr, data.nbytes) for c, (addr, data) in enumerate(stores)]
    log = _log(tmp_path, rows + _end((64, 0)))
    r = replay(cfg, plan, read_log(log), [[tile], []])
    d = r["drams"][0]
    for addr, data in stores:
        assert np.array_equal(d.view(addr, data.nbytes), data)      # updates into zeros
    assert d.traffic["gemm_writes"] == sum(x.nbytes for _, x in stores)
    assert d.traffic["gemm_reads"] == 64
    assert r["r_writes"] == [sum(x.nbytes for a, x in stores if a >= plan.r_base), 0]


def test_a_write_with_no_store_behind_it_is_an_error(tmp_path):
    cfg, plan, tile, stores = _setup()
    addr, data = stores[0]
    log = _log(tmp_path, [(0, 0, 5, UPDATE, COMPUTE, addr, data.nbytes)] + _end())
    with pytest.raises(AssertionError, match="cycle 5: GPU 0 DRAM write .* no store behind it"):
        replay(cfg, plan, read_log(log), [[], []])          # no tile retired: no store


def test_data_of_the_wrong_size_is_an_error(tmp_path):
    cfg, plan, tile, stores = _setup()
    addr, data = stores[0]
    log = _log(tmp_path, [(0, 0, 7, UPDATE, COMPUTE, addr, data.nbytes + 2)] + _end())
    with pytest.raises(AssertionError, match="cycle 7: GPU 0 write of .* carries"):
        replay(cfg, plan, read_log(log), [[tile], []])


def test_an_access_outside_the_memory_is_an_error(tmp_path):
    cfg, plan, tile, stores = _setup()
    log = _log(tmp_path, [(0, 1, 3, READ, DMA, plan.o_base - 64, 64)] + _end())
    with pytest.raises(AssertionError, match="cycle 3: GPU 1 DRAM access .* outside"):
        replay(cfg, plan, read_log(log), [[], []])


def test_a_received_packet_nobody_sent_is_an_error(tmp_path):
    cfg, plan, tile, stores = _setup()
    log = _log(tmp_path, [(0, 0, 9, UPDATE, REMOTE, plan.o_base, 64)] + _end())
    with pytest.raises(AssertionError, match="cycle 9: GPU 0 writes a received packet"):
        replay(cfg, plan, read_log(log), [[], []])


def test_a_truncated_log_is_refused(tmp_path):
    log = tmp_path / "log.bin"
    log.write_bytes(np.array([0, 0, 1, 2, 0], dtype="<i8").tobytes())    # 5 of 7 fields
    with pytest.raises(ValueError, match="truncated"):
        read_log(log)


def test_a_log_without_its_end_is_refused(tmp_path):
    """The GEMM's load bytes are written when the run ends; a log without them (a run that
    was cut short) is not replayed."""
    cfg, plan, tile, stores = _setup()
    log = _log(tmp_path, [(0, 0, 5, UPDATE, COMPUTE, stores[0][0], stores[0][1].nbytes)]
               + _end((64,)))
    with pytest.raises(AssertionError, match="0 counts of GPU 1's GEMM loads"):
        replay(cfg, plan, read_log(log), [[tile], []])


def _random_log(plan, rng, retired, events):
    """Records of ``events`` random requests the exact mode accepts, one per cycle, at six
    bursts shared by every GPU (so that most requests depend on earlier ones): local stores
    (plain or updates) while a GPU has stores left, DMA reads each sending a packet of their
    snapshot, forwarded stores sent on, and received packets written (plain or updates)."""
    n, burst = plan.n, plan.p.burst_bytes
    left = [[0, 0] for _ in range(n)]                 # local, forwarded stores per GPU
    for i in range(n):
        for t in retired[i]:
            remote, data = plan.tile_bursts(i, t)
            left[i][int(remote)] += len(data)
    places = plan.o_base + burst * rng.choice(plan.out_bytes // burst, 6, replace=False)
    rows, sent, taken = [], [0] * n, [0] * n
    for cycle in range(events):
        g, what = int(rng.integers(n)), int(rng.integers(4))
        place, op = int(rng.choice(places)), int(rng.choice([STORE, UPDATE]))
        if what == 0 and left[g][0]:
            left[g][0] -= 1
            rows.append((0, g, cycle, op, COMPUTE, place, burst))
        elif what == 1:                                # its packet: not a forwarded store
            rows += [(0, g, cycle, READ, DMA, place, burst), (1, g, cycle, 0, 0, 0, 0)]
            sent[g] += 1
        elif what == 2 and left[g][1]:
            left[g][1] -= 1
            chunk = (g + 1) % n
            rows.append((1, g, cycle, WriteKind.UPDATE.value, chunk * plan.ids.units, 0, 0))
            sent[g] += 1
        elif what == 3 and taken[g] < sent[(g + 1) % n]:
            taken[g] += 1
            rows.append((0, g, cycle, op, REMOTE, place, burst))
    return rows + _end([0] * n)


@pytest.mark.parametrize("gpus", [2, 3])
def test_bursts_by_level_equal_requests_in_order(tmp_path, monkeypatch, gpus):
    """The level-by-level replay (:func:`~t3hw.verif.cosim_replay._by_bursts`) leaves every
    DRAM as the request-by-request one does, on random logs whose requests mostly depend on
    earlier ones (the same few bursts read, overwritten and added to, snapshots carried to
    the neighbour)."""
    import random
    from t3hw.verif import cosim_replay
    seed = random.randrange(1 << 32)
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    cfg = small(gpus)
    plan = Plan(cfg)
    retired = [plan.producers[i].order() for i in range(gpus)]
    log = read_log(_log(tmp_path, _random_log(plan, rng, retired, 3000)))
    want = replay(cfg, plan, log, retired, by_bursts=False)

    def refuse(*args):
        raise AssertionError("the replay fell back to request by request")
    monkeypatch.setattr(cosim_replay, "_by_rows", refuse)
    got = replay(cfg, Plan(cfg), log, retired)
    for a, b in zip(got["drams"], want["drams"]):
        assert np.array_equal(a.memory.mem, b.memory.mem)
        assert a.traffic == b.traffic
    assert got["r_writes"] == want["r_writes"]
    assert np.abs(want["drams"][0].memory.mem).any()       # the log wrote something


def test_a_split_runs_log_replays_as_the_one_processs(tmp_path):
    """A run split over processes logs its parts one after the other (each in cycle order):
    the replay sorts them back into the one process's order and leaves the same memory."""
    import random
    seed = random.randrange(1 << 32)
    print(f"seed={seed}")
    cfg = small(4)
    plan = Plan(cfg)
    retired = [plan.producers[i].order() for i in range(4)]
    log = read_log(_log(tmp_path, _random_log(plan, np.random.default_rng(seed), retired,
                                              3000)))
    parts = np.concatenate([log[np.isin(log[:, 1], [0, 1])], log[np.isin(log[:, 1], [2, 3])]])
    assert not np.array_equal(parts, log)
    one, split = replay(cfg, plan, log, retired), replay(cfg, Plan(cfg), parts, retired)
    for a, b in zip(one["drams"], split["drams"]):
        assert np.array_equal(a.memory.mem, b.memory.mem) and a.traffic == b.traffic
        assert (a.r_writes, a.last_write) == (b.r_writes, b.last_write)
