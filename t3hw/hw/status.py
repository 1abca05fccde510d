# SPDX-License-Identifier: Apache-2.0
"""The status registers every block carries, written one way: sticky error bits with a
write-one-to-clear strobe, and event counters.

Each block has an ``errors`` output (a struct of sticky bits), a ``clear`` input of the same
layout and a ``stats`` output of counters; :func:`sticky_errors` and :func:`count` are the
only places their update rules are written. The counters wrap (their width is
``EngineParams.counter_width``); software reads them as deltas.
"""

from amaranth import *

__all__ = ["sticky_errors", "count"]


def sticky_errors(m, errors, clear, events):
    """Update the sticky bits ``errors`` (a ``data.View`` or value) from this cycle's
    ``events`` (same layout): a bit is set by its event and stays set until the same bit of
    ``clear`` is pulsed. A bit whose event and clear come in the same cycle stays set, so an
    error is never lost to a clear that raced it."""
    m.d.sync += errors.eq((Value.cast(errors) & ~Value.cast(clear)) | Value.cast(events))


def count(m, counter, event, *, late=None):
    """Add one to ``counter`` in every cycle ``event`` is high (wrapping at its width).

    With ``late`` (a name), the event is first registered in a flip-flop of that name and
    counted the cycle after: the logic behind ``event`` then drives one flip-flop, not the
    enable of a counter, and the counter shows the event two cycles after it."""
    if late is not None:
        registered = Signal(name=late)
        m.d.sync += registered.eq(event)
        event = registered
    with m.If(event):
        m.d.sync += counter.eq(counter + 1)
