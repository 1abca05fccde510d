# SPDX-License-Identifier: Apache-2.0
"""The tracker's cycle-by-cycle driving and scoring, written once for every simulator.

:class:`TrackerCheck` drives the tracker's inputs for one cycle, then compares ``busy``,
``program.ready``, ``trigger.valid`` and every trigger with
:class:`sim_models.tracker.TrackerCycleModel`, and (:meth:`TrackerCheck.check_state`) every
sticky error bit and counter. It touches the design only through two functions on the ports
as the generated Verilog names them (``write__payload``, ...): ``set(name, value)`` and
``get(name) -> int``. The cocotb testbench (:class:`t3hw.verif.cocotb_tb.TrackerTB`) and the
amaranth.sim driver (:func:`t3hw.verif.amsim.run_tracker`) supply those two functions and
their own way of settling and clocking; the checks are these.
"""

from sim_models.tracker import Trigger, TrackerCycleModel
from t3hw.spec.layouts import (Codec, program_layout, tracker_errors_layout,
                               tracker_stats_layout, trigger_layout, write_layout)


__all__ = ["TrackerCheck"]


class TrackerCheck:
    """Driving and scoring of one tracker against its cycle model.

    Parameters
    ----------
    params : EngineParams
        The tracker's parameters.

    Attributes
    ----------
    model : TrackerCycleModel
        The reference, advanced one cycle per :meth:`score`.
    cycles : int
        Cycles scored since construction.
    transfers : int
        Triggers the design handed over (``valid & ready``).
    log : list of (int, Trigger)
        The cycle and trigger of every transfer.
    """

    def __init__(self, params):
        self.params = params
        self.write_c   = Codec(write_layout(params))
        self.program_c = Codec(program_layout(params))
        self.trigger_c = Codec(trigger_layout(params))
        self.errors_c  = Codec(tracker_errors_layout(params))
        self.stats_c   = Codec(tracker_stats_layout(params))
        self.model = TrackerCycleModel(params)
        self.cycles = 0
        self.transfers = 0
        self.log = []

    def drive(self, set_, write=None, program=None, ready=True):
        """Set this cycle's inputs: an observed ``write`` and a ``program`` request (dicts of
        their fields, or None for none) and ``trigger.ready``."""
        set_("write__valid", write is not None)
        if write is not None:
            set_("write__payload", self.write_c.pack(**write))
        set_("program__valid", program is not None)
        if program is not None:
            set_("program__payload", self.program_c.pack(**program))
        set_("trigger__ready", ready)

    def score(self, get, write=None, program=None, ready=True):
        """After the design settled on :meth:`drive`'s inputs: compare every output with the
        model, then advance the model by the cycle. Returns ``(took, popped)``: whether the
        program request was accepted, and the trigger handed over (or None)."""
        model, n = self.model, self.cycles
        exp_ready, exp_valid, exp_trig = model.expected(write is not None)
        got_busy = get("busy")
        assert got_busy == model.busy, f"cycle {n}: busy {got_busy}, model {model.busy}"
        got_ready, got_valid = get("program__ready"), get("trigger__valid")
        assert got_ready == exp_ready, f"cycle {n}: program.ready {got_ready}, model {exp_ready}"
        assert got_valid == exp_valid, f"cycle {n}: trigger.valid {got_valid}, model {exp_valid}"
        if exp_valid:
            got = self.trigger_c.unpack(get("trigger__payload"))
            assert Trigger(**got) == exp_trig, f"cycle {n}: trigger {got}, model {exp_trig}"
        took = program is not None and bool(exp_ready)
        popped = model.step(write=write, program=program if took else None, trigger_ready=ready)
        if popped is not None:
            self.transfers += 1
            self.log.append((n, popped))
        self.cycles += 1
        return took, popped

    @property
    def drain_cycles(self):
        """Idle cycles after which the trigger queue is empty whatever it held."""
        return self.params.trigger_depth + 4

    def check_state(self, get):
        """Compare every sticky error bit and every counter with the model."""
        got_err = self.errors_c.unpack(get("errors"))
        exp_err = {k: int(v) for k, v in self.model.model.errors.items()}
        assert got_err == exp_err, f"errors {got_err}, model {exp_err}"
        got_stats = self.stats_c.unpack(get("stats"))
        assert got_stats == self.model.model.stats, \
            f"stats {got_stats}, model {self.model.model.stats}"
