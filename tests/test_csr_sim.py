# SPDX-License-Identifier: Apache-2.0
"""Fast amaranth.sim tests of the register block against its cycle model.

The stimulus, the scoreboard and the scenarios are the cocotb testbench's
(:mod:`sim_models.csr`); only the port access differs. Every cycle, ``r_data``, the sticky
errors, the clears and every field of the three program streams are compared with
:class:`sim_models.csr.CsrModel`.
"""

import random

import pytest

from sim_models import csr as csr_model
from sim_models.csr import CsrEnv
from t3hw.csr import BusSignature, Csr
from t3hw.layouts import CsrCommand
from t3hw.amsim import run_env
from t3hw.params import EngineParams
from t3hw.regmap import RegisterMap


PARAMS = {
    # Degenerate: 2 regions, 2 descriptors, 2 tracker entries, 8-bit addresses.
    "minimal": EngineParams(tracker_entries=2, tile_width=1, count_width=1, beats_width=1,
                            cmd_width=1, trigger_depth=1, counter_width=8, addr_width=8,
                            pitch_width=8, regions=2, device_width=1, rows_width=1,
                            row_bytes_width=1, burst_bytes=1),
    # Wide: 64-bit addresses and counters (two registers each), 32-bit tiles.
    "wide":    EngineParams(tracker_entries=16, tile_width=32, count_width=24, cmd_width=4,
                            counter_width=64, addr_width=64, pitch_width=64, regions=64,
                            device_width=16, rows_width=24, row_bytes_width=32),
    "default": EngineParams(),
}


def _simulate(params, body, *, seed=1, stall=0.0, **env_args):
    """Run ``body(env, cycle)`` on a fresh :class:`~t3hw.csr.Csr` from reset."""
    env = CsrEnv(params, random.Random(seed), stall=stall, **env_args)
    return run_env(Csr(params), env, body)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_every_register(name):
    _simulate(PARAMS[name], csr_model.every_register)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_every_error_bit(name):
    _simulate(PARAMS[name], csr_model.provoke_errors)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_readback(name):
    _simulate(PARAMS[name], csr_model.readback)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_random_against_model(name, seed):
    """Random accesses (reads, writes, both at once, unmapped, commands valid and not) with
    back-pressure, busy targets and random error events, scored every cycle."""
    env = _simulate(PARAMS[name], csr_model.drain, seed=seed, ops=3000, stall=0.2, events=0.02)
    assert set(env.seen["errors"]) == {"unmapped", "read_only", "bad_command", "busy"}
    assert {c.value for c in CsrCommand} <= set(env.seen["commands"])
    assert env.seen["reads"] == env.seen["writes"] == set(env.map.by_name)
    assert {g for g, _ in env.targets.log} == {"REGION", "DESC", "TRACK"}


def test_map_placement_rules():
    """Sections at fixed addresses; fields never straddle registers; wide fields in _LO/_HI."""
    for params in PARAMS.values():
        rm = RegisterMap(params)
        assert [r.addr for r in rm.registers] == sorted(r.addr for r in rm.registers)
        assert len(rm.by_name) == len(rm.registers)
        assert rm.by_name["ID"].addr == 0 and rm.by_name["CSR_ERRORS"].addr == 0x40
        assert [rm.groups[g].registers[0].addr for g in ("REGION", "DESC", "TRACK")] == \
            [0x80, 0xc0, 0x100]
        for group in rm.groups.values():
            covered = sorted((f.bit, f.width) for r in group.registers for f in r.fields)
            assert sum(w for _, w in covered) == group.layout.size
            for reg in group.registers:
                assert all(f.offset + f.width <= 32 for f in reg.fields)
    wide = RegisterMap(PARAMS["wide"])
    assert [f.width for f in wide.by_name["REGION_BASE_HI"].fields] == [32]
    assert "TRACKER_TRIGGERS_HI" in wide.by_name and "DESC_TILE" in wide.by_name


def test_bad_arguments():
    with pytest.raises(TypeError, match="params must be an EngineParams, not 3"):
        Csr(3)
    with pytest.raises(ValueError, match=r"addr_width must be an integer in \[3, 32\], not 2"):
        BusSignature(2)
    with pytest.raises(ValueError, match=r"ops must be a non-negative integer, not -1"):
        CsrEnv(EngineParams(), random.Random(1), ops=-1)
