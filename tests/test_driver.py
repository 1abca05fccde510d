# SPDX-License-Identifier: Apache-2.0
"""The driver (:mod:`t3hw.sw.driver`) over the register-file model (:class:`sim_models.csr.ModelBus`),
which applies every request to the reference models of the address map, DMA and tracker and
to the arbiter's configuration (:class:`sim_models.csr.ArbiterConfig`).

The main test programs one GPU of a 4-GPU fused GEMM + ring reduce-scatter, reads every
region and descriptor back through the registers, compares the reference models' state with
the plan, and then runs the GPU's stores and the neighbour's updates through those models:
every tracked tile must trigger exactly once, on its last write, and its DMA must send the
tile to GPU i-1.
"""

import asyncio

import pytest

from sim_models.csr import ModelBus
from sim_models.dma import walk
from sim_models.gpu import GemmProducer, GemmShape, GpuConfig
from t3hw.sw.driver import Driver, program_ring_reduce_scatter, ring_reduce_scatter_plan
from t3hw.spec.layouts import ArbPolicy, CsrCommand, RegionMode, WriteKind, WriteSource
from t3hw.spec.params import EngineParams


GPUS = 4
PARAMS = EngineParams()


def _producer(gpu, *, rows_per_chunk=32, hidden=128):
    return GemmProducer(shape=GemmShape(m=GPUS * rows_per_chunk, k=48, n=hidden),
                        gpu=GpuConfig(cus=4, tile_m=16, tile_n=32), n_gpus=GPUS,
                        gpu_index=gpu, output_base=0x10000)


def _run(coro):
    return asyncio.run(coro)


def _ints(fields, **more):
    """Fields with enum members as their values."""
    return {**{k: getattr(v, "value", v) for k, v in fields.items()}, **more}


async def _read_all(driver, plan):
    regions = {i: await driver.read_region(i) for i in range(driver.params.regions)}
    descriptors = {c: await driver.read_descriptor(c) for c in plan["descriptors"]}
    return regions, descriptors


@pytest.mark.parametrize("gather", [True, False], ids=["gather", "no_gather"])
@pytest.mark.parametrize("gpu", range(GPUS))
def test_ring_reduce_scatter_programs_and_reads_back(gpu, gather):
    bus = ModelBus(PARAMS)
    driver = Driver(bus, PARAMS)
    producer = _producer(gpu)
    plan = _run(program_ring_reduce_scatter(driver, producer, gather=gather))
    prev = (gpu - 1) % GPUS
    # The plan: stage-0 chunk remote to GPU i-1, the others tracked (own chunk: local
    # without gather), entries and descriptors for the tiles of stages 1 .. N-1.
    first, own = (gpu + 1) % GPUS, gpu
    assert plan["regions"][first]["mode"] == RegionMode.REMOTE
    assert plan["regions"][first]["device"] == prev
    assert plan["regions"][own]["mode"] == (RegionMode.TRACKED if gather else RegionMode.LOCAL)
    tracked = [t for s in range(1, GPUS if gather else GPUS - 1)
               for t in producer.chunks[(gpu + 1 + s) % GPUS]]
    assert sorted(plan["entries"]) == sorted(tracked)
    assert {d["device"] for d in plan["descriptors"].values()} == {prev}
    # Read back through the registers: exactly what was planned.
    regions, descriptors = _run(_read_all(driver, plan))
    for i, got in regions.items():
        want = plan["regions"].get(i)
        if want is None:
            assert got["valid"] == 0
        else:
            assert got == _ints(want, valid=1)
    for cmd, got in descriptors.items():
        assert got == _ints(plan["descriptors"][cmd], valid=1)
    # The reference models hold the same state.
    targets = bus.targets
    for i, want in plan["regions"].items():
        assert targets.addrmap.regions[i] == _ints(want, valid=1)
    assert set(targets.dma.table) == set(plan["descriptors"])
    for tile, (threshold, cmd) in plan["entries"].items():
        e = targets.tracker.entry(tile)
        assert (e.threshold, e.cmd, e.count, e.rearm) == (threshold, cmd, 0, False)
    errors = _run(driver.errors())
    assert not any(v for bits in errors.values() for v in bits.values()), errors
    # Every request went through the block once: regions, then descriptor + arm per tile.
    kinds = [g for g, _ in targets.log]
    assert kinds == ["REGION"] * GPUS + ["DESC", "TRACK"] * len(tracked)


def test_programmed_ring_runs_on_the_models():
    """GPU 1's stores (staggered order) and GPU 2's updates through the programmed models:
    stage-0 stores leave for GPU 0; every tracked tile fires once, on its last write, and its
    DMA sends it to GPU 0 with the planned op."""
    gpu = 1
    bus = ModelBus(PARAMS)
    driver = Driver(bus, PARAMS)
    producer = _producer(gpu)
    plan = _run(program_ring_reduce_scatter(driver, producer))
    am, tr, dma = bus.targets.addrmap, bus.targets.tracker, bus.targets.dma
    burst = PARAMS.burst_bytes
    fired, sent = [], []
    for tile in producer.order():
        addr, rows, row_bytes, pitch = producer.store_region(tile)
        writes = [(addr + r * pitch + c, min(burst, row_bytes - c))
                  for r in range(rows) for c in range(0, row_bytes, burst)]
        # The neighbour's update of this tile arrives interleaved with the local stores.
        incoming = list(writes) if tile in plan["entries"] else []
        for n, (a, nbytes) in enumerate(writes):
            where, fields = am.classify(a, tile, nbytes, WriteKind.UPDATE)
            if where == "net":
                sent.append(fields)
                continue
            assert fields["tracked"] == (tile in plan["entries"])
            for source in ([WriteSource.COMPUTE]
                           + ([WriteSource.REMOTE] if n < len(incoming) else [])):
                if fields["tracked"]:
                    trig = tr.observe(tile, 1, source=source)
                    if trig is not None:
                        fired.append((trig, tr.stats["writes_compute"] + tr.stats["writes_remote"]))
                        assert dma.trigger(trig.cmd)
    first = producer.chunks[producer.stage_chunk(0)]
    assert len(sent) == sum(producer.store_region(t)[1] for t in first)
    assert {p["device"] for p in sent} == {0} and {p["kind"] for p in sent} == {1}
    assert [t.tile for t, _ in fired] == [t for t in producer.order() if t in plan["entries"]]
    assert not any(tr.errors.values()) and tr.stats["unprogrammed"] == 0
    # Each trigger came with the tile's last write; its DMA walks the tile to GPU 0.
    total = 0
    for trig, writes_so_far in fired:
        threshold, cmd = plan["entries"][trig.tile]
        total += threshold
        assert writes_so_far == total and cmd == trig.cmd
        desc = plan["descriptors"][cmd]
        packets = []
        while (item := dma.next_read()) is not None:
            read, packet, index = item
            packets.append(packet)
            dma.response(read.tag)
            if not dma.bursts_left:
                break
        want = [(0, dst, desc["op"].value, trig.tile, nbytes)
                for _, dst, nbytes in walk(PARAMS, desc)]
        assert [(p.device, p.addr, p.kind, p.tile, p.bytes) for p in packets] == want


def test_remote_map_dma_map_and_errors():
    bus = ModelBus(PARAMS)
    driver = Driver(bus, PARAMS)

    async def body():
        await driver.check()
        a = await driver.remote_map(0x1000, 0x100, 3, 0x9000)
        b = await driver.track_map(0x2000, 0x100)
        assert (a, b) == (0, 1)
        await driver.clear_region(0)
        assert await driver.track_map(0x3000, 0x10) == 0
        assert (await driver.read_region(1))["mode"] == RegionMode.TRACKED.value
        cmd = await driver.dma_map(300, 4, src=0x2000, rows=2, row_bytes=64, pitch=128,
                                   device=2, dst=0x4000)
        assert cmd == 300 % PARAMS.dma_descriptors
        assert (await driver.read_descriptor(cmd))["tile"] == 300
        await driver.clear_descriptor(cmd)
        assert (await driver.read_descriptor(cmd))["valid"] == 0
        assert cmd not in bus.targets.dma.table
        assert bus.targets.tracker.entry(300).threshold == 4
        # Target rejections are reported; the read-back shows the table unchanged.
        await driver.track_map(0x2080, 0x100, index=5)          # overlaps region 1
        await driver.arm(300, 4, cmd)                           # already armed
        await driver.program_descriptor(7, src=0, rows=0, row_bytes=1, pitch=0, device=0,
                                        dst=0, tile=0)
        errors = await driver.errors()
        assert {k for k, v in errors["addrmap"].items() if v} == {"overlap"}
        assert {k for k, v in errors["tracker"].items() if v} == {"reprogram"}
        assert {k for k, v in errors["dma"].items() if v} == {"bad_program"}
        assert not any(errors["csr"].values())
        assert (await driver.read_region(5))["valid"] == 0
        assert (await driver.read_descriptor(7))["valid"] == 0
        await driver.clear_errors()
        assert not any(v for bits in (await driver.errors()).values() for v in bits.values())
        # Counters come from the models.
        bus.targets.addrmap.classify(0x2000, tile=1, bytes=64)
        bus.targets.tracker.observe(300, 1)
        stats = await driver.stats()
        assert stats["addrmap"]["tracked"] == 1 and stats["tracker"]["writes_compute"] == 1
        await driver.disarm(300)
        assert bus.targets.tracker.entry(300) is None

    _run(body())


def test_read_back_waits_for_the_load():
    """Over a bus with no idle cycles (each access one clock, nothing settles), the driver's
    read-backs poll STATUS until the load is done, and get the entry without a busy error;
    reading the group right after the read command instead returns the staged value and
    sets CSR_ERRORS.busy."""
    bus = ModelBus(PARAMS, settle=False)
    driver = Driver(bus, PARAMS)
    rm = driver.map
    region = dict(mode=RegionMode.TRACKED.value, base=0x2000, size=0x100, device=0,
                  remote_base=0)
    desc = dict(src=0x2000, rows=2, row_bytes=64, pitch=128, device=2, dst=0x4000,
                tile=5, op=WriteKind.STORE.value)

    async def body():
        await driver.check()
        await driver.program_region(3, **region)
        await driver.program_descriptor(9, **desc)
        assert await driver.read_region(3) == {**region, "valid": 1}
        assert await driver.read_descriptor(9) == {**desc, "valid": 1}
        assert await driver.read_region(2) == {**dict.fromkeys(region, 0), "valid": 0}
        assert not any(v for bits in (await driver.errors()).values() for v in bits.values())
        # reads send nothing (the region applies after the descriptor: its verdict is later)
        assert sorted(g for g, _ in bus.targets.log) == ["DESC", "REGION"]
        # Without the wait: the group as staged (index 9, every other field 0), and busy.
        await driver.write_group("DESC", index=9)
        await driver.write_group("COMMAND", command=CsrCommand.DESC_READ)
        first = rm.groups["DESC"].registers[0]
        assert await driver.read(first.addr) == rm.encode("DESC", index=9)[0][1]
        await driver.wait("desc_pending")
        assert await driver.read_group("DESC") == {**desc, "valid": 1, "index": 9}
        assert {k for k, v in (await driver.errors())["csr"].items() if v} == {"busy"}

    _run(body())


def test_program_arbiter():
    """ARB reads the parameters' configuration after reset; configurations given by policy
    member, name and code reach the arbiter and show in ARB_STATUS; each kind of bad one
    raises, sets ARBITER_ERRORS.bad_config and leaves the configuration in effect, and does
    not fail the next good one; errors(), clear_errors() and stats() include the arbiter."""
    params = PARAMS.replace(arbiter_policy=ArbPolicy.T3_MCA.value, mca_threshold=0,
                            mca_saturation=20, mca_window_log2=6, starvation_limit=100)
    bus = ModelBus(params)
    driver = Driver(bus, params)
    arb = bus.targets.arbiter
    rest = dict(saturation=20, window_log2=6, starvation_limit=100)

    async def body():
        await driver.check()
        assert await driver.read_group("ARB") == dict(policy=2, threshold=0, **rest)
        assert await driver.arbiter_status() == dict(policy=2, threshold=0, measuring=1)
        for policy, threshold, more, code in ((ArbPolicy.COMPUTE_FIRST, 5, {}, 1),
                                              ("Round_Robin", 0, dict(starvation_limit=1), 0),
                                              (2, 0, dict(saturation=255, window_log2=24), 2),
                                              ("t3_mca", 17, {}, 2),
                                              ("T3_MCA_RR", 0, {}, 3)):
            await driver.program_arbiter(policy=policy, threshold=threshold, **more)
            want = dict(policy=code, threshold=threshold, **{**rest, **more})
            assert arb.config == want and await driver.read_group("ARB") == want
            assert await driver.arbiter_status() == dict(policy=code, threshold=threshold,
                                                         measuring=int(code >= 2 and not threshold))
        good = dict(arb.config)
        for bad in (dict(policy="compute_first", starvation_limit=0),
                    dict(policy="t3_mca", window_log2=25),
                    dict(policy="round_robin", threshold=0, saturation=0)):
            with pytest.raises(RuntimeError, match=r"the arbiter rejected the configuration .*"
                                                   r"the previous configuration stays"):
                await driver.program_arbiter(**bad)
            assert arb.config == good
            assert (await driver.arbiter_status())["threshold"] == good["threshold"]
            errors = await driver.errors()
            assert errors["arbiter"] == {"bad_config": 1, "bad_response": 0}
            assert not any(v for block, bits in errors.items() if block != "arbiter"
                           for v in bits.values())
        await driver.program_arbiter(policy="compute_first", threshold=9)      # bad_config set
        assert arb.config["threshold"] == 9 and not any((await driver.errors())["arbiter"].values())
        # Arguments checked before any access.
        log = len(bus.targets.log)
        with pytest.raises(ValueError, match=r"policy must be one of \['round_robin', "
                                             r"'compute_first', 't3_mca', 't3_mca_rr'\], not 'fifo'"):
            await driver.program_arbiter(policy="fifo")
        with pytest.raises(ValueError, match=r"field 'threshold' must be in \[0, 255\], not 256"):
            await driver.program_arbiter(policy="t3_mca", threshold=256)
        assert len(bus.targets.log) == log
        # The arbiter's own errors and counters.
        arb.errors["bad_response"] = True
        arb.stats["starved"] = 12
        assert (await driver.errors())["arbiter"] == {"bad_config": 0, "bad_response": 1}
        await driver.clear_errors()
        assert not any(v for bits in (await driver.errors()).values() for v in bits.values())
        stats = await driver.stats()
        assert stats["arbiter"] == {**dict.fromkeys(arb.stats, 0), "starved": 12}

    _run(body())


def test_check_catches_a_parameter_mismatch():
    driver = Driver(ModelBus(PARAMS), PARAMS.replace(regions=16))
    with pytest.raises(RuntimeError, match="CONFIG .* does not match"):
        _run(driver.check())


def test_bad_arguments():
    with pytest.raises(ValueError, match="poll_limit must be a positive integer, not 0"):
        Driver(ModelBus(PARAMS), PARAMS, poll_limit=0)
    with pytest.raises(TypeError, match="params must be an EngineParams"):
        Driver(ModelBus(PARAMS), {})
    with pytest.raises(ValueError, match=r"n_gpus must be in \[1, 2\]"):
        ring_reduce_scatter_plan(_producer(0), PARAMS.replace(regions=2))
    with pytest.raises(ValueError, match="count_width must hold it"):
        ring_reduce_scatter_plan(_producer(0), PARAMS.replace(count_width=5, beats_width=4))
    odd = GemmProducer(shape=GemmShape(m=48, k=8, n=64), gpu=GpuConfig(cus=1, tile_m=16,
                       tile_n=32), n_gpus=GPUS, gpu_index=0)      # 6 tiles: chunks of 2 or 1
    with pytest.raises(ValueError, match="whole rows of tiles"):
        ring_reduce_scatter_plan(odd, PARAMS)
