# SPDX-License-Identifier: Apache-2.0
"""cocotb testbench of the generated address map Verilog, scored cycle by cycle.

The stimulus, the scoreboard and the directed scenarios are :mod:`t3hw.verif.addrmap_env`'s (the
amaranth.sim tests run the same ones): every cycle, ``store.ready``, ``rx.ready`` and
``valid`` and every payload field of ``net``, ``mem`` and ``rx_mem``, ``errors`` and
``capture`` are compared with :class:`sim_models.addrmap.AddrMapModel`; counters at the end
of each test.
Run-time settings come from the environment that ``test_addrmap.py`` sets: ``T3HW_PARAMS``,
``T3HW_SEED``, ``T3HW_ADDRMAP_STORES`` (random stores sent by ``test_random``).
"""

import os

import cocotb

from t3hw.verif import addrmap_env as addrmap_model
from t3hw.verif.addrmap_env import AddrMapEnv
from t3hw.verif.cocotb_tb import EnvTB


class AddrMapTB(EnvTB):
    """One address map driven through an :class:`AddrMapEnv` (``env_args`` are its options)."""

    def __init__(self, dut, **env_args):
        super().__init__(dut, lambda params, rng: AddrMapEnv(params, rng, **env_args))


@cocotb.test()
async def test_random(dut):
    """Random region writes (some overlapping, empty, wrapping or of unknown mode), stores
    and received packets at region boundaries and crossing region ends, packets for other
    devices, in REMOTE regions and in no region, with back-pressure on ``net``, ``mem`` and
    ``rx_mem``; ``errors`` and ``capture`` compared every cycle."""
    stores = int(os.environ.get("T3HW_ADDRMAP_STORES", "20000"))
    tb = AddrMapTB(dut, stores=stores)
    await tb.hold_reset()
    await addrmap_model.drain(tb.env, tb.cycle)
    env = tb.env
    dut._log.info("seed=%d: %d stores in %d cycles, taken %s, stats %s, %d region writes "
                  "rejected, errors %s, rx refused with Q packets held in %d cycles, "
                  "%d cycles with coincident error events",
                  tb.seed, env.sent, env.cycle, env.taken, env.model.stats, env.rejected,
                  {k for k, v in env.model.errors.items() if v}, env.rx_held, env.coincident)
    assert all(env.model.stats.values()) and all(env.model.errors.values())
    assert 0 < env.rx_tracked < env.received - env.rx_refused == env.taken["rx_mem"]
    assert env.rx_held > 0                  # rx refused: Q packets held behind a stalled rx_mem
    assert env.coincident > 0


@cocotb.test()
async def test_region_boundaries(dut):
    """base - 1, base, base + size - 1 and base + size of adjacent regions of every mode."""
    tb = AddrMapTB(dut)
    await tb.hold_reset()
    await addrmap_model.boundaries(tb.env, tb.cycle)


@cocotb.test()
async def test_every_error_bit(dut):
    """Each sticky error provoked alone, compared with the model, and cleared."""
    tb = AddrMapTB(dut)
    await tb.hold_reset()
    await addrmap_model.provoke_errors(tb.env, tb.cycle)


@cocotb.test()
async def test_every_refusal(dut):
    """Each refused store and packet alone, with its bit, counter and capture."""
    tb = AddrMapTB(dut)
    await tb.hold_reset()
    await addrmap_model.refusals(tb.env, tb.cycle)


@cocotb.test()
async def test_back_to_back_writes(dut):
    """Region writes in consecutive cycles, each checked against the table the one before
    it left (removed, moved or replaced regions), with their verdicts and the table."""
    tb = AddrMapTB(dut)
    await tb.hold_reset()
    await addrmap_model.back_to_back(tb.env, tb.cycle)
