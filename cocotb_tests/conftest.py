# SPDX-License-Identifier: Apache-2.0
"""Shared options of the cocotb regressions."""

import os
import random

import pytest


def pytest_addoption(parser):
    parser.addoption("--waves", action="store_true", default=bool(os.environ.get("WAVES")),
                     help="write an FST dump and a .gtkw per test (also: WAVES=1)")
    parser.addoption("--seed", type=int, default=None,
                     help="seed of the random tests (default: T3HW_SEED or random)")


@pytest.fixture
def seed(request):
    value = request.config.getoption("--seed")
    if value is None:
        value = int(os.environ.get("T3HW_SEED", random.randrange(1 << 31)))
    print(f"seed={value}")
    return value


@pytest.fixture
def waves(request):
    return request.config.getoption("--waves")
