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
from t3hw.spec.layouts import (Codec, TrackOp, TrackResult, WriteKind, WriteSource, program_layout, tracker_capture_layout,
                               tracker_errors_layout, tracker_result_layout,
                               tracker_stats_layout, trigger_layout, write_layout)


__all__ = ["TrackerCheck", "hold_past_capacity", "read_back_and_verdicts"]


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
    results : list of dict
        Every verdict on ``result``, in order.
    """

    def __init__(self, params):
        self.params = params
        self.write_c   = Codec(write_layout(params))
        self.program_c = Codec(program_layout(params))
        self.trigger_c = Codec(trigger_layout(params))
        self.errors_c  = Codec(tracker_errors_layout(params))
        self.stats_c   = Codec(tracker_stats_layout(params))
        self.result_c  = Codec(tracker_result_layout(params))
        self.capture_c = Codec(tracker_capture_layout(params))
        self.model = TrackerCycleModel(params)
        self.cycles = 0
        self.transfers = 0
        self.log = []
        self.results = []
        self._query = 0         # desc_query driven this cycle (drive sets it)
        self._asked = 0         # the last cycle's query (the tracker's register of it)
        self._held = (True, None)   # desc_held due this cycle: the answer to the query of
                                    # two cycles ago (a register, high from reset)

    def drive(self, set_, write=None, program=None, ready=True):
        """Set this cycle's inputs: an observed ``write`` and a ``program`` request (dicts of
        their fields, or None for none) and ``trigger.ready``."""
        set_("write__valid", write is not None)
        if write is not None:
            set_("write__payload", self.write_c.pack(**write))
        set_("program__valid", program is not None)
        if program is not None:
            set_("program__payload", self.program_c.pack(**program))
        self._query = self._next_query()
        set_("trigger__ready", ready)
        set_("desc_query", self._query)

    def _next_query(self):
        """This cycle's ``desc_query``: on even cycles a command a pending firing names (if
        any), on odd cycles each command in turn, so ``desc_held`` is checked both ways."""
        m, n = self.model.model, self.cycles
        if n % 2 == 0 and m.pending:
            held = sorted(m.kept[i].cmd for i in m.pending)
            return held[(n // 2) % len(held)]
        return (n // 2) % self.params.dma_descriptors

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
        got_held, (exp_held, last) = get("desc_held"), self._held
        assert got_held == exp_held, \
            f"cycle {n}: desc_held {got_held} for command {last}, model {exp_held}"
        self._held = (model.desc_held(self._asked), self._asked)
        self._asked = self._query
        exp_result, exp_hold = model.outputs()
        got_hold = get("hold")
        assert got_hold == exp_hold, f"cycle {n}: hold {got_hold}, model {exp_hold}"
        got_rvalid = get("result__valid")
        assert got_rvalid == (exp_result is not None), \
            f"cycle {n}: result.valid {got_rvalid}, model {exp_result}"
        if exp_result is not None:
            got = self.result_c.unpack(get("result__payload"))
            # An entry that is not armed shows 0 in the fields the model leaves out.
            keys = list(got)
            exp = {k: int(exp_result.get(k, 0)) for k in keys}
            assert {k: got[k] for k in keys} == exp, \
                f"cycle {n}: result {got}, model {exp_result}"
            self.results.append(exp_result)
        took, popped = model.step(write=write, program=program, trigger_ready=ready)
        assert took == bool(exp_ready and program is not None)
        if popped is not None:
            self.transfers += 1
            self.log.append((n, popped))
        self.cycles += 1
        return took, popped

    def drained(self):
        """Whether the model's pipeline, trigger queue and ack queue are empty (with
        ``trigger.ready`` held high, every trigger leaves within ``6 * tracker_entries *
        2**pending_width`` cycles)."""
        m = self.model
        return not (m.queue or m.acks or m.s1 or m.s2 or m.s3 or m.s4)

    async def drain(self, cycle, get):
        """Idle cycles (``cycle()``, the driver's) until :meth:`drained`, three more for the
        last request's errors and counters to be registered (a counter counts an event the
        cycle after it), then :meth:`check_state`."""
        while not self.drained():
            await cycle()
        for _ in range(3):
            await cycle()
        self.check_state(get)

    def check_state(self, get):
        """Compare every sticky error bit and every counter with the model."""
        got_err = self.errors_c.unpack(get("errors"))
        exp_err = {k: int(v) for k, v in self.model.model.errors.items()}
        assert got_err == exp_err, f"errors {got_err}, model {exp_err}"
        got_stats = self.stats_c.unpack(get("stats"))
        assert got_stats == self.model.model.stats, \
            f"stats {got_stats}, model {self.model.model.stats}"
        if self.model.capture is not None:
            got_cap = self.capture_c.unpack(get("capture"))
            assert got_cap == self.model.capture, \
                f"capture {got_cap}, model {self.model.capture}"


def _arm_req(tile, threshold, cmd, rearm=0):
    return dict(op=TrackOp.ARM, tile=tile, threshold=threshold, cmd=cmd, rearm=rearm)


def _write_req(tile, beats=1):
    return dict(tile=tile, beats=beats, kind=WriteKind.STORE, source=WriteSource.COMPUTE)


# --- scenarios shared by the cocotb testbench and the amaranth.sim tests -----------------
# ``tb`` has ``cycle(write, program, ready)``, ``drain()``, ``clear_errors()``, ``check``
# (this TrackerCheck), ``model``, ``params``, ``transfers`` and ``log``.

async def hold_past_capacity(tb):
    """Trigger output held while every entry completes, twice over: nothing is lost. Every
    entry is armed one-shot (threshold 1) and completed with ``trigger.ready`` low; re-arming
    any of them is refused (BUSY) while its trigger waits, and writes to them are
    unprogrammed. Then one re-arm entry completes ``2**pending_width`` times with the output
    still held: the last firing is the one that can be lost (``overflow``). Released, every
    other firing leaves exactly once, and the entries can be armed again."""
    p = tb.params
    n = p.tracker_entries
    tiles = list(range(n))
    start = tb.transfers
    for tile in tiles:
        while not (await tb.cycle(program=_arm_req(tile, 1, tile % (1 << p.cmd_width)),
                                  ready=False))[0]:
            pass
    for tile in tiles:
        await tb.cycle(write=_write_req(tile), ready=False)
    for tile in tiles:                  # refused: each entry's firing is pending
        while not (await tb.cycle(program=_arm_req(tile, 1, 0), ready=False))[0]:
            pass
    for _ in range(8):
        await tb.cycle(ready=False)
    assert tb.model.model.errors["reprogram"]
    assert [r["code"] for r in tb.check.results[-n:]] == [TrackResult.BUSY.value] * n
    assert tb.transfers == start and len(tb.model.queue) == n
    await tb.clear_errors()
    await tb.drain()
    assert sorted(t.tile for _, t in tb.log[-n:]) == tiles and tb.transfers - start == n
    # A re-arm entry fires 2**pending_width times with the output held: the last is lost.
    fires = 1 << p.pending_width
    while not (await tb.cycle(program=_arm_req(0, 1, 1 % (1 << p.cmd_width), rearm=1),
                              ready=False))[0]:
        pass
    for _ in range(fires):
        await tb.cycle(write=_write_req(0), ready=False)
    for _ in range(8):
        await tb.cycle(ready=False)
    assert tb.model.model.errors["overflow"] and tb.model.model.stats["dropped"] == 1
    before = tb.transfers
    await tb.drain()
    assert tb.transfers - before == fires - 1
    assert all(t.tile == 0 for _, t in tb.log[before:])


async def read_back_and_verdicts(tb):
    """Every verdict of :class:`~t3hw.spec.layouts.TrackResult`, and the read-back of an entry
    part-way through its count: the model checks each ``result`` field by field."""
    p = tb.params
    top = (1 << p.tile_width) - 1
    thr = min(3, p.max_threshold)
    requests = [
        (_arm_req(top, thr, 1 % (1 << p.cmd_width), rearm=1), TrackResult.OK),
        (_arm_req(top, thr, 0), TrackResult.BUSY),
        (_arm_req(top ^ 1, 0, 0), TrackResult.BAD_THRESHOLD),
        (dict(op=TrackOp.READ, tile=top, threshold=0, cmd=0, rearm=0), TrackResult.OK),
        (dict(op=TrackOp.DISARM, tile=top ^ 1, threshold=0, cmd=0, rearm=0),
         TrackResult.NOT_ARMED),
        (dict(op=3, tile=top, threshold=0, cmd=0, rearm=0), TrackResult.BAD_OP),
    ]
    for request, code in requests:
        start = len(tb.check.results)
        while not (await tb.cycle(program=request))[0]:
            pass
        while len(tb.check.results) == start:
            await tb.cycle()
        assert tb.check.results[-1]["code"] == code.value, (request, tb.check.results[-1])
    if thr > 1:
        await tb.cycle(write=_write_req(top))
        while not (await tb.cycle(program=requests[3][0]))[0]:
            pass
        start = len(tb.check.results)
        while len(tb.check.results) == start:
            await tb.cycle()
        assert tb.check.results[-1]["count"] == 1
    await tb.drain()
    assert tb.model.model.errors["reprogram"] and tb.model.model.errors["bad_threshold"]
    assert tb.model.model.errors["bad_op"]
