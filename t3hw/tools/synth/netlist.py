# SPDX-License-Identifier: Apache-2.0
"""Passes over a Yosys ECP5 JSON netlist between synthesis and place and route: the sinks of
every net (:func:`net_sinks`), and the move of block RAM read registers into the RAMs' own
output registers (:func:`absorb_ram_output_registers`)."""


def net_sinks(cells):
    """``{net bit: [(cell name, input pin), ...]}`` of a Yosys JSON module's ``cells``."""
    sinks = {}
    for name, cell in cells.items():
        for pin, bits in cell["connections"].items():
            if cell["port_directions"].get(pin) == "input":
                for bit in bits:
                    sinks.setdefault(bit, []).append((name, pin))
    return sinks


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
            plan, enable = {}, None
            for pin, bits in con.items():
                if ram["port_directions"][pin] != "output" or not isinstance(bits[0], int):
                    continue
                to = sinks.get(bits[0], [])
                if not to and bits[0] not in port_bits:
                    continue                                    # an unused output
                if len(to) != 1 or to[0][1] != "DI" or bits[0] in port_bits:
                    break
                ff = cells[to[0][0]]
                fp, fc = ff["parameters"], ff["connections"]
                cemux = fp.get("CEMUX", "1").strip()
                if (ff["type"] != "TRELLIS_FF" or fc.get("CLK") != con["CLKB"]
                        or fp.get("CLKMUX", "CLK").strip() != "CLK"
                        or fc.get("LSR", ["0"]) != ["0"] or fc.get("M", ["0"]) != ["0"]
                        or cemux not in ("1", "CE")):
                    break
                ce = ["1"] if cemux == "1" else fc["CE"]
                if enable not in (None, ce):
                    break
                enable = ce
                plan[pin] = (to[0][0], fc["Q"])
            else:
                if not plan:
                    continue
                for pin, (ff, q) in plan.items():
                    con[pin] = q
                    del cells[ff]
                prm["REGMODE_A"] = prm["REGMODE_B"] = "OUTREG"
                con["OCEA"] = con["OCEB"] = enable
                absorbed[f"{mname}.{name}"] = len(plan)
    return absorbed
