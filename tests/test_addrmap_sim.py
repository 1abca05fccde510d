# SPDX-License-Identifier: Apache-2.0
"""Fast amaranth.sim tests of the address map against its reference model, cycle by cycle.

The stimulus, the scoreboard and the scenarios are the cocotb testbench's
(:mod:`t3hw.verif.addrmap_env`); only the port access differs.
"""

import random

import pytest

from sim_models.addrmap import AddrMapModel
from t3hw.verif import addrmap_env as addrmap_model
from t3hw.verif.addrmap_env import AddrMapEnv
from t3hw.hw.addrmap import AddrMap
from t3hw.spec.layouts import RegionMode, WriteKind
from t3hw.verif.amsim import run_env
from t3hw.spec.params import EngineParams


PARAMS = {
    "pair":    EngineParams(addr_width=8, pitch_width=8, regions=2, device_width=1,
                            burst_bytes=1),
    "small":   EngineParams(addr_width=12, pitch_width=12, regions=4, device_width=2,
                            burst_bytes=4),
    "default": EngineParams(),
}


def _simulate(params, body, *, seed=1, **env_args):
    """Run ``body(env, cycle)`` on a fresh :class:`~t3hw.hw.addrmap.AddrMap` from reset."""
    return run_env(AddrMap(params), AddrMapEnv(params, random.Random(seed), **env_args), body)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_random_against_model(name, seed):
    """Random regions (some rejected), boundary stores and received packets with idle
    cycles and back-pressure, every output field compared every cycle."""
    env = _simulate(PARAMS[name], addrmap_model.drain, seed=seed, stores=1500)
    assert env.sent == 1500 and env.taken["net"] > 0 and env.taken["mem"] > 0
    assert 0 < env.rx_tracked < env.received == env.taken["rx_mem"]
    assert env.rx_held > 0                  # rx refused behind a full stage A and rx_mem
    assert env.rejected > 0


@pytest.mark.parametrize("name", ["small", "default"])     # the scenario uses 4 regions
def test_region_boundaries(name):
    _simulate(PARAMS[name], addrmap_model.boundaries)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_every_error_bit(name):
    _simulate(PARAMS[name], addrmap_model.provoke_errors)


@pytest.mark.parametrize("name", ["small", "default"])     # the scenario uses 3 regions
def test_back_to_back_writes_checked_in_order(name):
    _simulate(PARAMS[name], addrmap_model.back_to_back)


def test_model_translation_and_unmapped():
    m = AddrMapModel(PARAMS["default"])
    assert m.program(2, valid=1, mode=RegionMode.REMOTE, device=7, base=0x1000, size=0x100,
                     remote_base=0x9000)
    assert m.classify(0x10ff, tile=5, bytes=64) == (
        "net", dict(device=7, addr=0x90ff, kind=WriteKind.UPDATE.value, tile=5, bytes=64))
    assert m.classify(0x1100, tile=5, bytes=64, kind=WriteKind.UPDATE) == (
        "mem", dict(addr=0x1100, tile=5, bytes=64, kind=1, tracked=0))
    assert m.stats["remote"] == 1 and m.stats["unmapped"] == 1
    assert not m.program(3, valid=1, mode=RegionMode.LOCAL, base=0x10ff, size=1)
    assert m.errors["overlap"] and m.regions[3] is None


def test_regions_validated():
    with pytest.raises(ValueError, match=r"regions must be a power of two in \[2, 64\], not 6"):
        EngineParams(regions=6)
    with pytest.raises(ValueError, match=r"regions must be an integer in \[2, 64\], not 1"):
        EngineParams(regions=1)
