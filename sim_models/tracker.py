# SPDX-License-Identifier: Apache-2.0
"""Reference model of the tracker (:mod:`t3hw.hw.tracker`).

Two levels, with the RTL's semantics and the RTL's layouts:

* :class:`TrackerModel`: the transaction semantics: arm, disarm, observe a write, get the
  trigger it fires, with the same sticky errors and counters. The performance model and the
  reference engine use it.
* :class:`TrackerCycleModel`: the same state machine with the RTL's timing (five-stage
  pipeline, ``trigger_depth`` queue, programming only in cycles with no write). The cocotb
  testbench steps it once per clock and compares every output, every cycle.

Field names of errors and counters come from :func:`t3hw.spec.layouts.tracker_errors_layout` and
:func:`t3hw.spec.layouts.tracker_stats_layout`, so they match the RTL's ports bit for bit.
"""

from collections import deque
from dataclasses import dataclass

from t3hw.spec.layouts import TrackOp, WriteSource, tracker_errors_layout, tracker_stats_layout
from t3hw.spec.params import EngineParams

from .env import BlockModel


__all__ = ["Trigger", "Entry", "TrackerModel", "TrackerCycleModel"]


@dataclass(frozen=True)
class Trigger:
    """A trigger: the DMA command index and the tile that completed."""
    cmd:  int
    tile: int


@dataclass
class Entry:
    """One armed tracker entry."""
    tag:       int
    threshold: int
    count:     int
    cmd:       int
    rearm:     bool


_SOURCE_STAT = {
    WriteSource.COMPUTE: "writes_compute",
    WriteSource.DMA:     "writes_dma",
    WriteSource.REMOTE:  "writes_remote",
}


class TrackerModel(BlockModel):
    """Transaction-level tracker: a direct-mapped table of :class:`Entry`.

    Parameters
    ----------
    params : EngineParams, optional
        Table geometry and field widths (default: the paper's).

    Attributes
    ----------
    errors : dict of str to bool
        Sticky error bits, keyed by the RTL's field names.
    stats : dict of str to int
        Counters, keyed by the RTL's field names (wrapping at ``counter_width``).
    """

    def __init__(self, params: EngineParams = None):
        super().__init__(params, tracker_errors_layout, tracker_stats_layout)
        self.table = {}

    # -- helpers -------------------------------------------------------------------------
    def _split(self, tile):
        p = self.params
        if not 0 <= tile < (1 << p.tile_width):
            raise ValueError(f"tile must be in [0, {(1 << p.tile_width) - 1}], not {tile!r}")
        return tile & (p.tracker_entries - 1), tile >> p.index_width

    def entry(self, tile):
        """The armed :class:`Entry` of ``tile``, or ``None``."""
        index, tag = self._split(tile)
        e = self.table.get(index)
        return e if e is not None and e.tag == tag else None

    # -- requests ------------------------------------------------------------------------
    def arm(self, tile, threshold, cmd, rearm=False):
        """Arm ``tile``. Returns False (and sets an error) if the request is rejected."""
        p = self.params
        index, tag = self._split(tile)
        if not 0 <= threshold <= p.max_threshold:
            raise ValueError(f"threshold must be in [0, {p.max_threshold}], not {threshold!r}")
        if not 0 <= cmd < (1 << p.cmd_width):
            raise ValueError(f"cmd must be in [0, {(1 << p.cmd_width) - 1}], not {cmd!r}")
        if threshold == 0:
            self.errors["bad_threshold"] = True
            return False
        if index in self.table:
            self.errors["reprogram"] = True
            return False
        self.table[index] = Entry(tag=tag, threshold=threshold, count=0, cmd=cmd,
                                  rearm=bool(rearm))
        return True

    def disarm(self, tile):
        """Disarm ``tile`` if it is armed; returns whether it was."""
        index, tag = self._split(tile)
        e = self.table.get(index)
        if e is not None and e.tag == tag:
            del self.table[index]
            return True
        return False

    def program(self, op, tile, threshold=0, cmd=0, rearm=0):
        """Apply one programming request as the RTL's ``program`` port carries it."""
        if TrackOp(op) == TrackOp.ARM:
            return self.arm(tile, threshold, cmd, rearm)
        return self.disarm(tile)

    def observe(self, tile, beats=1, kind=0, source=WriteSource.COMPUTE):
        """Count one granted write; return the :class:`Trigger` it fires, or ``None``.

        ``kind`` does not change the count (stores and updates both count); ``source``
        selects the statistics counter.
        """
        p = self.params
        if not 0 <= beats < (1 << p.beats_width):
            raise ValueError(f"beats must be in [0, {(1 << p.beats_width) - 1}], not {beats!r}")
        self._bump(_SOURCE_STAT[WriteSource(source)])
        e = self.entry(tile)
        if e is None:
            self.errors["unprogrammed"] = True
            self._bump("unprogrammed")
            return None
        new = e.count + beats
        if new < e.threshold:
            e.count = new
            return None
        if new > e.threshold:
            self.errors["overcount"] = True
        if e.rearm:
            e.count = 0
        else:
            del self.table[tile & (p.tracker_entries - 1)]
        return Trigger(cmd=e.cmd, tile=tile)

    def unprogrammed_write(self, source=WriteSource.COMPUTE):
        """A write observed while the table is being cleared after reset."""
        self._bump(_SOURCE_STAT[WriteSource(source)])
        self.errors["unprogrammed"] = True
        self._bump("unprogrammed")


class TrackerCycleModel:
    """The tracker with the RTL's cycle timing, stepped once per clock.

    Call :meth:`step` once per cycle with the inputs the RTL samples at the end of that cycle;
    it returns the outputs the RTL must show during that cycle (before the clock edge).

    Parameters
    ----------
    params : EngineParams, optional
    """

    def __init__(self, params: EngineParams = None):
        self.model = TrackerModel(params)
        self.params = self.model.params
        self.queue = deque()
        self.s1 = None          # ("write" | "stale" | "prog", fields) or None
        self.s2 = None          # the same, one stage on
        self.s3 = None          # the same, two stages on: the request the RTL updates
        self.s4 = None          # the Trigger S3 completed last cycle, pushed this cycle
        self.sweep_left = 0     # cycles of the reset sweep still to run

    def reset(self):
        """``rst`` was just released: the table clear takes ``tracker_entries`` cycles."""
        self.sweep_left = self.params.tracker_entries

    @property
    def busy(self):
        """The ``busy`` output during this cycle."""
        return self.sweep_left > 0

    def expected(self, write_valid):
        """Outputs during this cycle: (program_ready, trigger_valid, trigger_payload or None)."""
        head = self.queue[0] if self.queue else None
        return (not write_valid and not self.busy, head is not None, head)

    def step(self, *, write=None, program=None, trigger_ready=False):
        """Advance one clock.

        Parameters
        ----------
        write : dict or None
            Fields of the observed write this cycle (``write.valid``), else None.
        program : dict or None
            Fields of the programming request *accepted* this cycle, else None.
        trigger_ready : bool
            ``trigger.ready`` this cycle.

        Returns
        -------
        Trigger or None
            The trigger transferred on ``trigger`` this cycle (valid and ready).
        """
        popped = None
        if self.queue and trigger_ready:
            popped = self.queue.popleft()
        # S4 pushes the trigger of the write S3 completed last cycle (a full queue takes a
        # push in a cycle in which its head leaves); S3 updates the entry of the request
        # accepted three cycles ago.
        if self.s4 is not None:
            if len(self.queue) < self.params.trigger_depth:
                self.queue.append(self.s4)
                self.model._bump("triggers")
            else:
                self.model.errors["overflow"] = True
                self.model._bump("dropped")
        self.s4 = None
        if self.s3 is not None:
            what, fields = self.s3
            if what == "stale":
                self.model.unprogrammed_write(fields["source"])
            elif what == "write":
                self.s4 = self.model.observe(fields["tile"], fields["beats"], fields["kind"],
                                             fields["source"])
            else:
                self.model.program(**fields)
        self.s3 = self.s2
        self.s2 = self.s1
        if write is not None:
            self.s1 = ("stale" if self.busy else "write", write)
        elif program is not None:
            self.s1 = ("prog", program)
        else:
            self.s1 = None
        if self.sweep_left:
            self.sweep_left -= 1
        return popped
