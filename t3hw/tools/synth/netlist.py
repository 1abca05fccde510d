# SPDX-License-Identifier: Apache-2.0
"""Passes over a Yosys ECP5 JSON netlist between synthesis and place and route: the sinks of
every net (:func:`net_sinks`), and the move of block RAM read registers and multiplier
product registers into the RAMs' and the DSP blocks' own output registers
(:func:`absorb_ram_output_registers`, :func:`absorb_mult_output_registers`)."""


def net_sinks(cells):
    """``{net bit: [(cell name, input pin), ...]}`` of a Yosys JSON module's ``cells``."""
    sinks = {}
    for name, cell in cells.items():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"].get(pin) == "input":
                for bit in bits:
                    sinks.setdefault(bit, []).append((name, pin))
    return sinks


def _output_flip_flops(cell, cells, sinks, port_bits, pins):
    """``{pin: (flip-flop name, its Q bits)}`` for the used outputs of ``cell`` among
    ``pins`` when each drives exactly one ``TRELLIS_FF`` data input and nothing else (no
    module port), the flip-flop on a rising edge with no set or reset and no ``M`` input;
    None when one does not. Unused outputs are left out."""
    plan = {}
    for pin, bits in cell["connections"].items():
        if (pin not in pins or cell["port_directions"][pin] != "output"
                or not isinstance(bits[0], int)):
            continue
        to = sinks.get(bits[0], [])
        if not to and bits[0] not in port_bits:
            continue                                    # an unused output
        if len(to) != 1 or to[0][1] != "DI" or bits[0] in port_bits:
            return None
        ff = cells[to[0][0]]
        fp, fc = ff["parameters"], ff["connections"]
        if (ff["type"] != "TRELLIS_FF" or fp.get("CLKMUX", "CLK").strip() != "CLK"
                or fc.get("LSR", ["0"]) != ["0"] or fc.get("M", ["0"]) != ["0"]):
            return None
        plan[pin] = (to[0][0], fc["Q"])
    return plan


def absorb_ram_output_registers(netlist):
    """Move the flip-flops that register a block RAM's read data into the RAM's own output
    register (``REGMODE = OUTREG``), in a Yosys ECP5 JSON ``netlist``, in place.

    Yosys 0.70 maps an inferred block RAM onto a ``DP16KD`` without its output register, so
    the RAM's clock-to-out (5.8 ns at speed 6) starts the path out of it; with the output
    register it is under 1 ns. The kit's blocks register every block RAM read in the fabric
    (the tracker's S1 ``rdata``, the DMA's ``got`` and check registers, the register block's
    ``got`` registers), with the same latency the output register has, so the register can
    move into the RAM. A ``DP16KD`` is rewritten only when every read data output it uses
    drives exactly one ``TRELLIS_FF`` data input and nothing else, and every such flip-flop
    is clocked by the read port's clock (``CLKB``, not inverted), has no set or reset
    (``LSR`` tied to 0), no ``M`` input, and the same clock enable as the others (always on,
    or one ``CE`` net). Each flip-flop is then removed, its output net is driven by the RAM's
    output, the RAM's ``REGMODE_A`` and ``REGMODE_B`` become ``OUTREG`` and its output clock
    enables (``OCEA``, ``OCEB``) take the flip-flops' enable. Nothing else changes: the same
    data reaches the same nets in the same cycle (no simulation model of ``DP16KD`` ships with
    Yosys, so this rests on the primitive's documented output register, not on a simulation).

    Returns ``{"module.cell": flip-flops absorbed}`` for every rewritten RAM.
    """
    absorbed = {}
    for mname, mod in netlist["modules"].items():
        cells = mod.get("cells", {})
        port_bits = {b for port in mod.get("ports", {}).values() for b in port["bits"]}
        sinks = net_sinks(cells)
        for name, ram in list(cells.items()):
            prm, con = ram["parameters"], ram["connections"]
            if (ram["type"] != "DP16KD" or prm.get("CLKBMUX", "CLKB").strip() != "CLKB"
                    or any(prm.get(k, "NOREG").strip() != "NOREG"
                           for k in ("REGMODE_A", "REGMODE_B"))):
                continue
            plan = _output_flip_flops(ram, cells, sinks, port_bits,
                                      {p for p, d in ram["port_directions"].items()
                                       if d == "output"})
            if not plan:
                continue
            ffs = [cells[ff] for ff, _ in plan.values()]
            if any(f["connections"].get("CLK") != con["CLKB"]
                   or f["parameters"].get("CEMUX", "1").strip() not in ("1", "CE")
                   for f in ffs):
                continue
            enables = {tuple(["1"] if f["parameters"].get("CEMUX", "1").strip() == "1"
                             else f["connections"]["CE"]) for f in ffs}
            if len(enables) != 1:
                continue
            enable = list(enables.pop())
            for pin, (ff, q) in plan.items():
                con[pin] = q
                del cells[ff]
            prm["REGMODE_A"] = prm["REGMODE_B"] = "OUTREG"
            con["OCEA"] = con["OCEB"] = enable
            absorbed[f"{mname}.{name}"] = len(plan)
    return absorbed


def absorb_mult_output_registers(netlist):
    """Move the flip-flops that register a multiplier's product into the ``MULT18X18D``'s own
    output register (``REG_OUTPUT_CLK = CLK0``), in a Yosys ECP5 JSON ``netlist``, in place.

    Yosys 0.70 maps a multiplication onto a ``MULT18X18D`` with no register, so a product
    registered in the fabric leaves the DSP block combinationally and crosses the routing to
    its flip-flops (the DMA's descriptor check: 3.9 ns inside the block, and about 8 ns in
    all from its operand registers). With the block's output register, nextpnr times the
    operands into that register through the multiplier (``MULT18X18D_REGS_OUTPUT``) and the
    product leaves it from a clock-to-out. A ``MULT18X18D`` is rewritten only when it has no
    register yet, and every product output it uses drives exactly one ``TRELLIS_FF`` data
    input and nothing else (no module port), every such flip-flop is clocked on the rising
    edge of one clock net, has no set or reset (``LSR`` tied to 0, reset value 0, as the
    block's register starts), no ``M`` input and no clock enable. Each flip-flop is removed,
    its output net is driven by the product output, and the block's ``CLK0`` takes the
    clock (``CE0`` tied to 1, ``RST0`` to 0). The same product reaches the same nets in the
    same cycle.

    Returns ``{"module.cell": flip-flops absorbed}`` for every rewritten multiplier.
    """
    regs = ("REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_INPUTC_CLK", "REG_PIPELINE_CLK",
            "REG_OUTPUT_CLK")
    absorbed = {}
    for mname, mod in netlist["modules"].items():
        cells = mod.get("cells", {})
        port_bits = {b for port in mod.get("ports", {}).values() for b in port["bits"]}
        sinks = net_sinks(cells)
        for name, mult in list(cells.items()):
            prm, con = mult["parameters"], mult["connections"]
            if (mult["type"] != "MULT18X18D"
                    or any(str(prm.get(k, "NONE")).strip() != "NONE" for k in regs)):
                continue
            plan = _output_flip_flops(mult, cells, sinks, port_bits,
                                      {p for p in con if p.startswith("P")})
            if not plan:
                continue
            ffs = [cells[ff] for ff, _ in plan.values()]
            clocks = {tuple(f["connections"]["CLK"]) for f in ffs}
            if (len(clocks) != 1 or any(f["parameters"].get("CEMUX", "1").strip() != "1"
                                        or f["parameters"].get("REGSET", "RESET").strip()
                                        != "RESET" for f in ffs)):
                continue
            clock = list(clocks.pop())
            for pin, (ff, q) in plan.items():
                con[pin] = q
                del cells[ff]
            prm.update(REG_OUTPUT_CLK="CLK0", REG_OUTPUT_CE="CE0", REG_OUTPUT_RST="RST0")
            con.update(CLK0=clock, CE0=["1"], RST0=["0"])
            mult["port_directions"].update(CLK0="input", CE0="input", RST0="input")
            absorbed[f"{mname}.{name}"] = len(plan)
    return absorbed
