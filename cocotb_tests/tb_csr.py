# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the generated register block Verilog, scored cycle by cycle.

The stimulus, the scoreboard and the directed scenarios are :mod:`t3hw.verif.csr_env`'s (the
amaranth.sim tests run the same ones): every cycle, ``r_data``, the sticky errors, the
clears and every field of the four program streams are compared with
:class:`sim_models.csr.CsrModel`; the targets are their reference models
(:class:`sim_models.csr.Targets`). ``test_driver_ring`` programs one GPU of a 4-GPU fused
GEMM + ring reduce-scatter with :class:`t3hw.sw.driver.Driver` over
:class:`t3hw.sw.driver.CocotbBus` and reads it all back, and ``test_driver_arbiter`` configures
the arbiter, while the environment keeps scoring every cycle. Run-time settings come from
the environment that ``test_csr.py`` sets:
``T3HW_PARAMS``, ``T3HW_SEED``, ``T3HW_CSR_OPS`` (random bus cycles of ``test_random``),
``T3HW_CSR_GPU`` (the GPU of ``test_driver_ring``).
"""

import os
import random

import cocotb
import pytest
from cocotb.triggers import RisingEdge

from sim_models.arbiter import MAX_WINDOW_LOG2, config_ok
from sim_models.csr import ArbiterConfig
from t3hw.verif import csr_env as csr_model, csr_scenarios
from t3hw.verif.csr_env import CsrEnv
from sim_models.gpu import GemmProducer, GemmShape, GpuConfig
from t3hw.sw.bus import CocotbBus
from t3hw.sw.driver import Driver, program_ring_reduce_scatter
from t3hw.spec.layouts import ArbPolicy, TrackResult
from t3hw.verif.cocotb_tb import EnvTB


class CsrTB(EnvTB):
    """One register block driven through a :class:`CsrEnv` (``env_args`` are its options)."""

    def __init__(self, dut, **env_args):
        super().__init__(dut, lambda params, rng: CsrEnv(params, rng, **env_args))

    async def start_driver(self):
        """Out of reset with the bus driven by a :class:`Driver` over :class:`CocotbBus`
        (the environment samples it, ``external_bus``) and scored every cycle until
        :meth:`stop_driver`; returns the driver."""
        dut = self.dut
        for name in ("bus__addr", "bus__w_data", "bus__w_stb", "bus__r_stb"):
            getattr(dut, name).value = 0
        await self.hold_reset()
        self._running = True

        async def score():
            while self._running:
                await self.cycle()

        self._monitor = cocotb.start_soon(score())
        await RisingEdge(dut.clk)
        return Driver(CocotbBus(dut), self.params)

    async def stop_driver(self):
        self._running = False
        await self._monitor


@cocotb.test()
async def test_random(dut):
    """Random accesses (reads, writes, both at once, unmapped, commands valid and not),
    back-pressure on the DMA and tracker streams, busy targets, random error events."""
    ops = int(os.environ.get("T3HW_CSR_OPS", "20000"))
    tb = CsrTB(dut, ops=ops, stall=0.2, events=0.02, answer=4)
    await tb.hold_reset()
    await csr_model.drain(tb.env, tb.cycle)
    env = tb.env
    dut._log.info("seed=%d: %d cycles, commands %s, errors seen %s, requests taken %d, "
                  "reads of a loading group %d", tb.seed, env.cycle, env.seen["commands"],
                  sorted(env.seen["errors"]), len(env.targets.log),
                  env.seen["reads_while_loading"])
    assert env.seen["errors"] == {"unmapped", "read_only", "bad_command", "busy"}
    assert set(env.seen["reads"]) == set(env.map.by_name)
    assert env.seen["reads_while_loading"] > 0
    assert {g for g, _ in env.targets.log} == {"REGION", "DESC", "TRACK", "ARB"}
    assert {config_ok(f) for g, f in env.targets.log if g == "ARB"} == {True, False}


@cocotb.test()
async def test_every_register(dut):
    """Reset values, RW patterns, W1C bit by bit, counters."""
    tb = CsrTB(dut, stall=0)
    await tb.hold_reset()
    await csr_model.every_register(tb.env, tb.cycle)


@cocotb.test()
async def test_every_error_bit(dut):
    """Each error bit of the block alone, read back and cleared; target rejections."""
    tb = CsrTB(dut, stall=0)
    await tb.hold_reset()
    await csr_model.provoke_errors(tb.env, tb.cycle)


@cocotb.test()
async def test_readback(dut):
    """Regions and descriptors written and read back through the read commands; arbiter
    configurations written and read back, and seen in ARB_STATUS."""
    tb = CsrTB(dut, stall=0)
    await tb.hold_reset()
    await csr_scenarios.readback(tb.env, tb.cycle)


@cocotb.test()
@cocotb.parametrize(scenario=["first_errors", "interrupt", "tracker_answers", "atomic_counters",
                              "refused_writes"])
async def test_scenario(dut, scenario):
    """First-error captures, the interrupt, the tracker's answers (3 cycles late), atomic
    64-bit counters, refused region and descriptor writes (:mod:`t3hw.verif.csr_scenarios`)."""
    tb = CsrTB(dut, stall=0, answer=3)
    await tb.hold_reset()
    await getattr(csr_scenarios, scenario)(tb.env, tb.cycle)


@cocotb.test()
async def test_driver_ring(dut):
    """The driver programs one GPU of a 4-GPU ring reduce-scatter and reads it all back:
    regions and descriptors through the read-back registers, tracker entries as the
    requests that left on ``tracker_program`` and through ``read_entry`` (the tracker's
    answers come 2 cycles after it takes a request)."""
    gpus, gpu = 4, int(os.environ.get("T3HW_CSR_GPU", "1"))
    tb = CsrTB(dut, stall=0.3, external_bus=True, answer=2)
    driver = await tb.start_driver()
    params = tb.params
    producer = GemmProducer(shape=GemmShape(m=gpus * 32, k=48, n=128),
                            gpu=GpuConfig(cus=4, tile_m=16, tile_n=32), n_gpus=gpus,
                            gpu_index=gpu, output_base=0x10000)
    plan = await program_ring_reduce_scatter(driver, producer)
    for index in range(params.regions):
        got = await driver.read_region(index)
        want = plan["regions"].get(index)
        assert got == ({"valid": 0, **dict.fromkeys(got, 0)} if want is None else
                       {**{k: getattr(v, "value", v) for k, v in want.items()}, "valid": 1}), \
            (index, got, want)
    for cmd, want in plan["descriptors"].items():
        got = await driver.read_descriptor(cmd)
        assert got == {**{k: getattr(v, "value", v) for k, v in want.items()}, "valid": 1}, \
            (cmd, got, want)
    # The driver waited for every load: the reads of the groups raised no busy.
    assert not any((await driver.errors())["csr"].values())
    arms = [fields for group, fields in tb.env.targets.log if group == "TRACK"]
    assert [(f["tile"], f["threshold"], f["cmd"], f["op"], f["rearm"]) for f in arms] == \
        [(t, th, cmd, 0, 0) for t, (th, cmd) in plan["entries"].items()]
    for tile, (threshold, cmd) in plan["entries"].items():
        e = tb.env.targets.tracker.entry(tile)
        assert (e.threshold, e.cmd) == (threshold, cmd)
        assert await driver.read_entry(tile) == dict(
            code=TrackResult.OK, valid=1, rearm=0, pending=0, threshold=threshold, count=0,
            cmd=cmd)
    await tb.stop_driver()
    dut._log.info("seed=%d GPU %d: %d regions, %d tracker entries, %d descriptors programmed "
                  "and read back in %d bus accesses, %d cycles", tb.seed, gpu,
                  len(plan["regions"]), len(plan["entries"]), len(plan["descriptors"]),
                  driver.bus.accesses, tb.env.cycle)


@cocotb.test()
async def test_driver_arbiter(dut):
    """The driver configures the arbiter: ARB reads the parameters' configuration after
    reset; a random configuration per policy (by name) leaves on ``arbiter_program`` (scored
    every cycle) and shows in ARB_STATUS; a bad one raises, keeps the configuration in effect
    and leaves ``ARBITER_ERRORS.bad_config`` set until :meth:`Driver.clear_errors`."""
    tb = CsrTB(dut, stall=0.3, external_bus=True)
    driver = await tb.start_driver()
    p, rng, arbiter = tb.params, random.Random(tb.seed), tb.env.targets.arbiter
    await driver.check()
    assert await driver.read_group("ARB") == dict(
        policy=p.arbiter_policy, threshold=p.mca_threshold, saturation=p.mca_saturation,
        window_log2=p.mca_window_log2, starvation_limit=p.starvation_limit)
    top = (1 << p.occupancy_width) - 1
    for policy in ArbPolicy:
        cfg = dict(threshold=rng.choice((0, rng.randint(1, top))), saturation=rng.randint(1, top),
                   window_log2=rng.randint(0, MAX_WINDOW_LOG2),
                   starvation_limit=rng.randint(1, (1 << p.starvation_width) - 1))
        await driver.program_arbiter(policy=policy.name.lower(), **cfg)
        assert arbiter.config == {"policy": policy.value, **cfg}
        assert await driver.arbiter_status() == dict(
            policy=policy.value, threshold=cfg["threshold"],
            measuring=ArbiterConfig.measuring({"policy": policy.value, **cfg}))
    good = dict(arbiter.config)
    with pytest.raises(RuntimeError, match="the arbiter rejected the configuration"):
        await driver.program_arbiter(policy="t3_mca", window_log2=MAX_WINDOW_LOG2 + 1)
    assert arbiter.config == good
    assert (await driver.errors())["arbiter"] == {"bad_config": 1, "bad_response": 0}
    await driver.clear_errors()
    assert not any(v for bits in (await driver.errors()).values() for v in bits.values())
    sent = [fields for group, fields in tb.env.targets.log if group == "ARB"]
    assert len(sent) == len(ArbPolicy) + 1 and not config_ok(sent[-1])
    await tb.stop_driver()
