# SPDX-License-Identifier: Apache-2.0
"""Formal proofs: the properties written beside each block, by bounded model checking
(SymbiYosys, ``smtbmc z3``), plus deliberately broken specs that must fail.

The proofs, their parameters and depths are :data:`t3hw.tools.formal.PROOFS` (``docs/formal.md``).
Each proof runs its ``bmc`` task (and ``prove`` where k-induction converges) and its
``cover`` task, which must reach every ``Cover``: a proof whose interesting events cannot
happen would pass vacuously. Files and counterexamples: ``build/formal/NAME/``.
"""

import pytest

from t3hw.tools.formal import PROOFS, TRACKER_PARAMS, run
from t3hw.tools.generate import convert
from t3hw.hw.tracker import Tracker


SOUND  = [name for name, proof in PROOFS.items() if proof.expect == "PASS"]
BROKEN = [name for name, proof in PROOFS.items() if proof.expect == "FAIL"]


def _report(result):
    return (f"{result.name} {result.task}: {result.status} in {result.seconds:.1f} s; "
            f"{result.failures()}; traces {[str(p) for p in result.trace]}; "
            f"log {result.workdir / 'logfile.txt'}")


#: The bounded proofs whose last steps take most of the suite's formal time (each step
#: costs about twice the one before): `make test` checks them two steps short of their
#: depth (tracker 14 of 16: 100 s instead of 320; dma 20 of 22), `make test-long`
#: (:func:`test_proof_full_depth`) and `make formal` at the full depth. Their covers, which
#: are quick, run at the full depth in both.
SHORTER_BMC = {"tracker": 2, "dma": 2}


@pytest.mark.parametrize("name", SOUND)
def test_proof(name):
    proof = PROOFS[name]
    for task, depth in proof.depths.items():
        if task == "bmc":
            depth -= SHORTER_BMC.get(name, 0)
        result = run(proof, task, depth=depth)
        assert result.status == "PASS", _report(result)


@pytest.mark.long
@pytest.mark.parametrize("name", sorted(SHORTER_BMC))
def test_proof_full_depth(name):
    proof = PROOFS[name]
    result = run(proof, "bmc")
    assert result.status == "PASS", _report(result)


@pytest.mark.parametrize("name, where", [
    # The tracker that misses a write disagrees with the shadow of its entry.
    ("tracker_drop_write", "t3hw/hw/tracker_formal.py"),
    # A T3-MCA class bound one slot tighter than documented is exceeded.
    ("arbiter_tight_bound", "t3hw/hw/arbiter.py"),
])
def test_broken_spec_is_caught(name, where):
    assert name in BROKEN
    result = run(PROOFS[name], "bmc")
    assert result.status == "FAIL", _report(result)
    assert any(where in line for line in result.failures()), _report(result)
    assert result.trace, "no counterexample VCD"


def test_generated_verilog_has_no_properties():
    """Only ``platform="formal"`` elaborates the properties: `t3hw generate` sees none."""
    text = convert(Tracker(TRACKER_PARAMS), "t3hw_tracker")
    assert "assert" not in text and "assume" not in text and "cover" not in text
