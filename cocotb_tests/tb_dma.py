# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the generated DMA Verilog, scored against the reference model.

The stimulus and the scoreboard are :mod:`t3hw.verif.dma_env`'s, the directed scenarios
:mod:`t3hw.verif.dma_scenarios`' (the amaranth.sim tests run the same ones): every read
request and every network packet is compared field by field with
:class:`sim_models.dma.DmaModel`, every cycle's error events and capture too,
``valid``/``payload`` of every output stream must hold until the transfer,
requested-and-unreturned reads never exceed ``max_outstanding``, and the errors seen and the
counters are compared at the end of each test.
Run-time settings come from the environment that ``test_dma.py`` sets: ``T3HW_PARAMS`` (JSON
of EngineParams), ``T3HW_SEED``, ``T3HW_DMA_JOBS`` (random descriptors run by ``test_random``).
"""

import os

import cocotb

from t3hw.verif import dma_scenarios as dma_model
from t3hw.verif.dma_env import DmaEnv
from t3hw.verif.cocotb_tb import EnvTB


class DmaTB(EnvTB):
    """One DMA driven through a :class:`DmaEnv` (``env_args`` are its options)."""

    def __init__(self, dut, **env_args):
        super().__init__(dut, lambda params, rng: DmaEnv(params, rng, **env_args))

    async def reset(self):
        """Reset, then run the table sweep; checks it lasts one cycle per descriptor."""
        await self.hold_reset()
        sweep = await dma_model.reset_sweep(self.env, self.cycle)
        assert sweep == self.params.dma_descriptors, f"reset sweep took {sweep} cycles"


@cocotb.test()
async def test_random(dut):
    """Random descriptors (1-row, 1-burst, ragged, even, maximal), random trigger order with
    repeats, invalid triggers, refused writes (bad shape, pitch or range, descriptor in
    use), returns with the error bit or a wrong tag, random read latency, back-pressure on
    ``read`` and ``packet``; every read, packet, error event and capture scored."""
    jobs = int(os.environ.get("T3HW_DMA_JOBS", "2000"))
    tb = DmaTB(dut, jobs=jobs, errors=0.03, stall=0.05, max_latency=16)
    await tb.reset()
    await dma_model.drain(tb.env, tb.cycle, limit=400 * jobs + 10_000)
    env = tb.env
    dut._log.info("seed=%d: %d descriptors run, %d reads/packets in %d cycles, shapes %s, "
                  "stats %s, errors %s, most reads in flight %d", tb.seed, env.triggered,
                  env.bursts, env.cycle, env.shapes, env.model.stats,
                  {k for k, v in env.model.errors.items() if v}, env.max_in_flight)
    assert env.triggered >= jobs * 0.9
    assert all(env.model.errors[name] for name in ("bad_descriptor", "bad_program",
                                                   "bad_range", "read_error", "bad_response"))
    assert env.model.stats["aborted"] > 0
    assert env.max_in_flight == tb.params.max_outstanding
    assert env.max_waiting == tb.params.max_outstanding      # the packet queue full
    assert env.refused > 0
    if "max" in env.shapes or tb.params.rows_width <= 3:
        assert env.shapes.get("max", 0) > 0
    assert {"one_burst", "one_row", "ragged", "even"} <= set(env.shapes) or \
        tb.params.burst_bytes == 1


@cocotb.test()
async def test_every_error_bit(dut):
    """Each sticky error provoked alone, compared with the model, and cleared."""
    tb = DmaTB(dut)
    await tb.reset()
    await dma_model.provoke_errors(tb.env, tb.cycle)


@cocotb.test()
async def test_busy_rewrite(dut):
    """A descriptor with queued triggers is not rewritten; the triggers run the old one."""
    tb = DmaTB(dut)
    await tb.reset()
    await dma_model.busy_rewrite(tb.env, tb.cycle)


@cocotb.test()
@cocotb.parametrize(fault=["error", "tag"])
async def test_abort(dut, fault):
    """An error bit or a wrong tag mid-descriptor aborts that descriptor only."""
    tb = DmaTB(dut)
    await tb.reset()
    await dma_model.abort_mid_descriptor(tb.env, tb.cycle, fault)


@cocotb.test()
async def test_full_ready_queue(dut):
    """A full ready queue holds ``trigger.ready`` low; every trigger still runs."""
    tb = DmaTB(dut)
    await tb.reset()
    held = await dma_model.full_queue(tb.env, tb.cycle)
    dut._log.info("%d triggers accepted with reads held (ready queue %d)", held,
                  tb.params.dma_ready_depth)


@cocotb.test()
async def test_program_first(dut):
    """A descriptor write and a trigger of it presented together: the write goes first."""
    tb = DmaTB(dut)
    await tb.reset()
    await dma_model.program_first(tb.env, tb.cycle)


@cocotb.test()
async def test_back_to_back(dut):
    """Queued descriptors read one burst per cycle, across descriptor boundaries."""
    tb = DmaTB(dut)
    await tb.reset()
    got = await dma_model.back_to_back(tb.env, tb.cycle)
    dut._log.info("reads in cycles %d..%d", got[0], got[-1])
