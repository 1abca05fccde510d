# SPDX-License-Identifier: Apache-2.0
"""Every failing endpoint of a placed and routed design, from nextpnr's SDF.

nextpnr's report names one critical path per clock. Timing closure needs the others too:
which registers miss the clock, by how much, and which register each one's worst path
starts from. This module reads the SDF that ``nextpnr-ecp5 --sdf`` writes (the routed
design's cell delays, ``IOPATH``, its interconnect delays, ``INTERCONNECT``, and its setup
checks, ``SETUPHOLD``) and propagates the latest arrival time from every clocked output
(a flip-flop's ``CLK -> Q``, a block RAM's ``CLKA/CLKB -> DO``) through the combinational
cells to every input with a setup check. Paths are single-clock and register to register,
as nextpnr times them (the timing wrapper puts a register on every block port); a
``SETUPHOLD`` entry's larger figure is taken as the setup time, so a slack here may be a
little below nextpnr's (the worst endpoint of the engine, seed 1: -3.01 ns here, -2.82 ns in
nextpnr's report).

:func:`analyse` gives every endpoint's slack and the start of its worst path;
:func:`summary` groups the failing ones by (start register, end register), named after
the netlist's cells with the packer's suffixes removed (``dut.arbiter.wait1``), which is
what ``docs/synthesis.md`` lists per change, and totals them per block (:func:`block_of`);
:func:`worst_path` follows one register's worst path hop by hop, with each net's fanout
(how round 12 of ``docs/synthesis.md`` found its paths).

**What placement alone could give.** :func:`analyse` and :func:`worst_path` take
``wire_cap_ps``: every interconnect delay above it counts as that much, the cells' delays
as routed. The slacks are then those of the same netlist on a placement whose every wire
is at most that long, so what still fails is held by its logic depth, not by where the
placer put its cells (round 15 of ``docs/synthesis.md``).
"""

import re
from collections import Counter, defaultdict

from .wrapper import DUT


__all__ = ["analyse", "summary", "block_of", "register_name", "wire_delays", "worst_path"]

#: Pins whose ``IOPATH`` starts a path (a clocked output), not a combinational arc.
CLOCK_PINS = frozenset({"CLK", "CLKA", "CLKB", "WCK"})

_TRIPLE = re.compile(r"\((-?\d+(?:\.\d+)?):(-?\d+(?:\.\d+)?):(-?\d+(?:\.\d+)?)\)")
_CHECK = re.compile(r"\(SETUPHOLD \((?:posedge|negedge) (\S+?)\)|\(SETUPHOLD (\S+?) ")


def _max_delay(text):
    """The largest max figure of the ``(min:typ:max)`` triples in ``text``."""
    return max(float(t[2]) for t in _TRIPLE.findall(text))


def _parse(lines, wire_cap_ps=None):
    arcs = defaultdict(list)            # pin -> [(next pin, delay)]
    starts = {}                         # clocked output pin -> clock-to-out
    setup = {}                          # checked input pin -> setup
    instance = None
    for line in lines:
        s = line.strip()
        if s.startswith("(INTERCONNECT"):
            _, src, dst, *_ = s.split()
            delay = _max_delay(s)
            arcs[src].append((dst, delay if wire_cap_ps is None else min(delay, wire_cap_ps)))
        elif s.startswith("(INSTANCE"):
            instance = s[len("(INSTANCE"):].rstrip(")").strip()
        elif s.startswith("(IOPATH"):
            _, a, z, *_ = s.split()
            if a in CLOCK_PINS:
                starts[f"{instance}/{z}"] = _max_delay(s)
            else:
                arcs[f"{instance}/{a}"].append((f"{instance}/{z}", _max_delay(s)))
        elif s.startswith("(SETUPHOLD"):
            match = _CHECK.match(s)
            pin = f"{instance}/{match.group(1) or match.group(2)}"
            setup[pin] = max(setup.get(pin, 0.0), _max_delay(s))
    return arcs, starts, setup


def _read(sdf, wire_cap_ps=None, *, only=None):
    """:func:`_parse` of the SDF ``sdf``, a path or an iterable of lines; of its lines that
    contain ``only`` if given."""
    if isinstance(sdf, str):
        with open(sdf) as f:
            return _read(f, wire_cap_ps, only=only)
    return _parse(sdf if only is None else (line for line in sdf if only in line),
                  wire_cap_ps)


def _propagate(sdf, wire_cap_ps=None):
    """Latest arrival time at every pin of the SDF ``sdf`` (a path or an iterable of lines),
    with each pin's driver on its latest path: ``(arcs, starts, setup, arrival, previous)``."""
    arcs, starts, setup = _read(sdf, wire_cap_ps)
    indegree = Counter(v for targets in arcs.values() for v, _ in targets)
    arrival = dict(starts)
    previous = {}                       # pin -> (driver pin, delay of the arc)
    ready = [pin for pin in set(arcs) | set(starts) if indegree[pin] == 0]
    while ready:                        # Kahn's order: every pin after all its drivers
        pin = ready.pop()
        for nxt, delay in arcs.get(pin, ()):
            if pin in arrival and arrival[pin] + delay > arrival.get(nxt, float("-inf")):
                arrival[nxt] = arrival[pin] + delay
                previous[nxt] = (pin, delay)
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    return arcs, starts, setup, arrival, previous


def analyse(sdf, period_ps, *, wire_cap_ps=None):
    """Every endpoint of the SDF ``sdf`` (a path or an iterable of lines) at a clock period
    of ``period_ps``, every interconnect delay at most ``wire_cap_ps`` if given (the module
    docstring).

    Returns
    -------
    list of (float, str, str)
        ``(slack_ps, endpoint pin, start pin of its worst path)``, worst first. Endpoints
        that no clocked output reaches are left out.
    """
    _, starts, setup, arrival, previous = _propagate(sdf, wire_cap_ps)

    def start_of(pin):
        while pin in previous:
            pin = previous[pin][0]
        return pin

    result = [(period_ps - arrival[pin] - t, pin, start_of(pin))
              for pin, t in setup.items() if pin in arrival]
    return sorted(result)


def wire_delays(sdf):
    """Every interconnect delay of the SDF ``sdf`` (a path or an iterable of lines), in ps,
    sorted: how long the placement's wires are, against ``wire_cap_ps``."""
    arcs, _, _ = _read(sdf, only="(INTERCONNECT")
    return sorted(d for targets in arcs.values() for _, d in targets)


def worst_path(sdf, period_ps, register, *, wire_cap_ps=None):
    """The worst path into the register (or RAM) named ``register`` (as
    :func:`register_name` names it: ``dut.arbiter.wait1``), hop by hop: what a failing
    group of :func:`summary` is made of. Returns ``{"slack_ps", "endpoint", "hops"}``,
    ``hops`` a list of ``{"pin", "delay_ps", "arrival_ps", "fanout"}`` from the clocked
    output to the endpoint (``delay_ps`` the cell's or the wire's delay into ``pin``;
    ``fanout`` the loads of the net a cell output drives, 0 at the endpoint), or None when
    no endpoint of that register is reached. ``wire_cap_ps`` as for :func:`analyse`."""
    arcs, starts, setup, arrival, previous = _propagate(sdf, wire_cap_ps)
    ends = [(period_ps - arrival[pin] - t, pin) for pin, t in setup.items()
            if pin in arrival and register_name(pin) == register]
    if not ends:
        return None
    slack, pin = min(ends)
    path = [pin]
    while path[-1] in previous:
        path.append(previous[path[-1]][0])
    hops = [{"pin": q, "delay_ps": previous[q][1] if q in previous else starts.get(q, 0.0),
             "arrival_ps": arrival[q], "fanout": len(arcs.get(q, ()))}
            for q in reversed(path)]
    return {"slack_ps": slack, "endpoint": pin, "hops": hops}


def register_name(pin):
    """The register (or RAM) a cell pin belongs to, without the packer's suffixes:
    ``dut.arbiter.wait1_TRELLIS_FF_Q_3/Q`` is ``dut.arbiter.wait1``; a register named after
    a Yosys-internal wire keeps that name (``dut.dma.$signal$12_TRELLIS_FF_Q`` is
    ``dut.dma.$signal``)."""
    cell = pin.rsplit("/", 1)[0].replace("\\", "")
    cell = re.sub(r"_TRELLIS_FF_Q(_\d+)?$", "", cell)
    head, dot, last = cell.rpartition(".")
    lead = "$" if last.startswith("$") else ""
    return head + dot + lead + re.sub(r"\$.*$", "", last[len(lead):])


def block_of(register):
    """The block a register belongs to: the first name under the wrapper's instance of the
    block (:data:`~t3hw.tools.synth.wrapper.DUT`): for the engine one of its blocks
    (``dut.arbiter.wait1`` is ``arbiter``, ``dut.slice_store.queue.full`` ``slice_store``),
    for a block alone a submodule or a register of its own; a register outside it (the
    wrapper's) is its whole name."""
    head, dot, rest = register.partition(".")
    return rest.split(".", 1)[0] if head == DUT and dot else register


def summary(endpoints, *, top=40):
    """The failing endpoints of :func:`analyse` grouped by (start register, end register):
    ``{"failing": n, "worst_ps": s, "groups": [{"from", "to", "endpoints", "worst_ps"},
    ...], "blocks": [{"block", "endpoints", "tns_ps", "worst_ps"}, ...]}``, the largest
    groups first (at most ``top``); ``blocks`` per block of the endpoint (:func:`block_of`),
    the largest total negative slack first. Two place-and-route runs of one netlist move
    the worst path from block to block; the blocks' totals show where a change of the RTL
    moved the failing paths."""
    failing = [e for e in endpoints if e[0] < 0]
    groups, blocks = defaultdict(list), defaultdict(list)
    for slack, pin, start in failing:
        end = register_name(pin)
        groups[(register_name(start), end)].append(slack)
        blocks[block_of(end)].append(slack)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))[:top]
    return {"endpoints": len(endpoints), "failing": len(failing),
            "worst_ps": round(endpoints[0][0]) if endpoints else None,
            "groups": [{"from": a, "to": b, "endpoints": len(s), "worst_ps": round(min(s))}
                       for (a, b), s in ranked],
            "blocks": [{"block": b, "endpoints": len(s), "tns_ps": round(sum(s)),
                        "worst_ps": round(min(s))}
                       for b, s in sorted(blocks.items(), key=lambda kv: sum(kv[1]))]}
