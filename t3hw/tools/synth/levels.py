# SPDX-License-Identifier: Apache-2.0
"""Logic levels between registers, from the synthesized ECP5 netlist, before placement.

Place and route gives each netlist a figure that moves with the seed and with the names of
its cells (``docs/synthesis.md``, rounds 7 and 13: about 3 MHz at the median of five seeds
for the same logic). The depth of logic does not: it is a property of the netlist, known a
minute after synthesis. Each level of a routed path costs a cell (0.24 ns for a LUT4 at
speed 6) and a route (0.5 to 2 ns on the engine's paths), so a 6.67 ns cycle (150 MHz),
less the clock-to-out and the setup, holds four levels at the engine's typical 1.1 to 1.3
ns of routing per hop, not five: the paths deeper than that are the ones a change of the
RTL must shorten. The count is a guide, not a forecast: netlists of the same RTL with fewer
deep paths have placed slower (``docs/synthesis.md``, round 14), since the Fmax is that of
the one worst-routed path.

A *level* is one cell entered through general routing: a ``LUT4``, a carry chain's entry
(``CCU2C``; the ripple through ``CIN`` is the chain's own wire and adds none), a LUT RAM's
read (``TRELLIS_DPR16X4``, ``RAD`` to ``DO``), and a wide-function multiplexer entered by its
select (``PFUMX`` ``C0``, ``L6MUX21`` ``SD``). A multiplexer's data inputs come from the two
LUTs or multiplexers of its own slice over dedicated wires, so a LUT5 (two ``LUT4`` and a
``PFUMX``) is one level, as its hop list in the SDF shows. Paths start at a flip-flop's
``Q``, at any output of a block RAM or a multiplier, and at the module's inputs (the timing
wrapper's registers); they end at every input of those cells but the clock and at the
module's outputs.

:func:`analyse` gives every endpoint bit's levels and the start of its deepest path;
:func:`summary` the histogram, the count above a limit and the groups above it by (start
register, end register), named as :mod:`t3hw.tools.synth.sta` names the SDF's, so that the
two lists can be read side by side.
"""

from collections import Counter, defaultdict

from .sta import block_of, register_name
from .wrapper import DUT


__all__ = ["COMBINATIONAL", "LIMIT", "analyse", "summary"]

#: The most levels a path of the engine can have at 150 MHz on the ECP5-85F, speed 6 (the
#: module docstring).
LIMIT = 4

#: Combinational cells: ``{type: ({input pin: levels it adds}, output pins)}``. A pin not
#: listed is not a combinational input (``WCK``, ``DI``, ``WAD`` and ``WRE`` of the LUT RAM
#: are its write port: endpoints).
COMBINATIONAL = {
    "LUT4": ({"A": 1, "B": 1, "C": 1, "D": 1}, ("Z",)),
    "LUT2": ({"A": 1, "B": 1}, ("Z",)),
    "PFUMX": ({"ALUT": 0, "BLUT": 0, "C0": 1}, ("Z",)),
    "L6MUX21": ({"D0": 0, "D1": 0, "SD": 1}, ("Z",)),
    "CCU2C": ({**{f"{p}{i}": 1 for p in "ABCD" for i in "01"}, "CIN": 0},
              ("S0", "S1", "COUT")),
    "TRELLIS_DPR16X4": ({"RAD": 1}, ("DO",)),
}

#: Inputs that are clocks: neither endpoints nor levels.
CLOCKS = frozenset({"CLK", "WCK", "CLKA", "CLKB", "CLK0", "CLK1", "CLK2", "CLK3"})

#: Cells of no logic (Yosys's scope records).
IGNORED = frozenset({"$scopeinfo"})


def _module(netlist, module):
    mods = netlist["modules"]
    if module not in mods:
        raise ValueError(f"module {module!r} is not in the netlist (it has "
                         f"{', '.join(sorted(n for n in mods if not n.startswith('$')))})")
    return mods[module]


def analyse(netlist, module, paths=None):
    """Every endpoint bit of ``module`` in the Yosys JSON ``netlist`` (a dict), with the
    levels of its deepest path and the start of that path. A dict ``paths`` is filled with
    the combinational cells of each endpoint's deepest path, in order (of the endpoint's
    last bit where it has several): what a group of :func:`summary` is made of.

    Returns
    -------
    list of (int, str, str)
        ``(levels, endpoint, start)``, the deepest first; ``endpoint`` and ``start`` are
        ``"<DUT>.<cell>/<pin>"`` (the SDF's spelling, :data:`~.wrapper.DUT` the block's
        instance) or ``"<DUT>/<port>"`` for a port of the module.

    Raises
    ------
    ValueError
        ``module`` is not in the netlist, or its cells form a combinational loop.
    """
    mod = _module(netlist, module)
    depth = {}                          # net bit -> (levels, start)
    driver = {}                         # net bit -> the combinational cell driving it
    ends = []                           # (endpoint, [bits])
    for port, info in mod["ports"].items():
        bits = [b for b in info["bits"] if isinstance(b, int)]
        if info["direction"] == "input":
            for b in bits:
                depth[b] = (0, f"{DUT}/{port}")
        else:
            ends.append((f"{DUT}/{port}", bits))
    comb = {}
    trace = {}                          # net bit -> (comb cell driving it, its deepest input)
    for name, cell in mod["cells"].items():
        kind = cell["type"]
        if kind in IGNORED:
            continue
        dirs, conns = cell["port_directions"], cell["connections"]
        if kind in COMBINATIONAL:
            comb[name] = cell
            through, outs = COMBINATIONAL[kind]
            for pin, bits in conns.items():
                bits = [b for b in bits if isinstance(b, int)]
                if pin in outs:
                    driver.update((b, name) for b in bits)
                elif dirs.get(pin) == "input" and pin not in through and pin not in CLOCKS:
                    ends.append((f"{DUT}.{name}/{pin}", bits))      # a LUT RAM's write
            continue
        for pin, bits in conns.items():
            bits = [b for b in bits if isinstance(b, int)]
            if dirs.get(pin) == "output":
                for b in bits:
                    depth[b] = (0, f"{DUT}.{name}/{pin}")
            elif pin not in CLOCKS:
                ends.append((f"{DUT}.{name}/{pin}", bits))
    # Comb cells in an order where each comes after the comb cells that drive it.
    inputs = {name: [(b, cost) for pin, cost in COMBINATIONAL[cell["type"]][0].items()
                     for b in cell["connections"].get(pin, ()) if isinstance(b, int)]
              for name, cell in comb.items()}
    users = defaultdict(list)
    waiting = {}
    for name, ins in inputs.items():
        drivers = {driver[b] for b, _ in ins if b in driver}
        waiting[name] = len(drivers)
        for d in drivers:
            users[d].append(name)
    ready = [name for name, n in waiting.items() if n == 0]
    done = 0
    while ready:
        name = ready.pop()
        done += 1
        cell = comb[name]
        best, via = (0, None), None
        for b, cost in inputs[name]:
            lv, start = depth.get(b, (0, None))
            if start is not None and (lv + cost > best[0] or best[1] is None):
                best, via = (lv + cost, start), b
        for pin in COMBINATIONAL[cell["type"]][1]:
            for b in cell["connections"].get(pin, ()):
                if isinstance(b, int):
                    depth[b] = best
                    trace[b] = (name, via)
        for user in users[name]:
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)
    if done != len(comb):
        loop = sorted(name for name, n in waiting.items() if n)[:3]
        raise ValueError(f"combinational loop through {len(comb) - done} cells "
                         f"(among them {', '.join(loop)})")
    if paths is not None:
        for end, bits in ends:
            for b in bits:
                cells = []
                while b in trace:
                    cell, b = trace[b]
                    cells.append(f"{DUT}.{cell}")
                paths[end] = cells[::-1]
    result = []
    for end, bits in ends:
        for b in bits:
            lv, start = depth.get(b, (0, None))
            if start is not None:
                result.append((lv, end, start))
    return sorted(result, key=lambda e: (-e[0], e[1]))


def summary(endpoints, *, limit=LIMIT, top=40):
    """:func:`analyse`'s endpoints in figures: ``{"endpoints": n, "limit": limit, "over":
    n, "max": levels, "histogram": {levels: endpoints}, "groups": [{"from", "to",
    "endpoints", "levels"}, ...], "blocks": [{"block", "endpoints", "levels"}, ...]}``;
    ``over`` counts the endpoints deeper than ``limit``, ``groups`` (at most ``top``, the
    largest first) and ``blocks`` (per block of the endpoint, :func:`~.sta.block_of`) are
    made of those, with the deepest path of each."""
    over = [e for e in endpoints if e[0] > limit]
    groups, blocks = defaultdict(list), defaultdict(list)
    for lv, end, start in over:
        name = _name(end)
        groups[(_name(start), name)].append(lv)
        blocks[block_of(name)].append(lv)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), -max(kv[1]), kv[0]))[:top]
    return {"endpoints": len(endpoints), "limit": limit, "over": len(over),
            "max": max((e[0] for e in endpoints), default=0),
            "histogram": {str(k): n for k, n in sorted(Counter(e[0] for e in endpoints)
                                                       .items())},
            "groups": [{"from": a, "to": b, "endpoints": len(v), "levels": max(v)}
                       for (a, b), v in ranked],
            "blocks": [{"block": b, "endpoints": len(v), "levels": max(v)}
                       for b, v in sorted(blocks.items(), key=lambda kv: (-len(kv[1]),
                                                                          kv[0]))]}


def _name(pin):
    """A register's name as :func:`~.sta.register_name` gives it; a port keeps its own
    (``dut/bus__w_data``)."""
    head, _, pin_name = pin.rpartition("/")
    return pin if head == DUT else register_name(pin)
