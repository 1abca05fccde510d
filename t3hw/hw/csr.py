# SPDX-License-Identifier: Apache-2.0
"""The register block: a 32-bit register bus that programs the address map, the tracker, the
DMA and the memory-controller arbiter, and reads their errors, counters and status.

The registers, their addresses and their fields are :class:`t3hw.spec.regmap.RegisterMap`'s; this
module only says what each group does (see ``docs/csr.md`` and ``docs/registers.md``).

Staging and commands
--------------------
A region, a descriptor, a tracker request or an arbiter configuration is wider than a
register, so it is written into its staging group (``REGION_*``, ``DESC_*``, ``TRACK_*``,
``ARB_*``: registers that are the payload of the block's output stream to the target) and
committed by writing a :class:`~t3hw.spec.layouts.CsrCommand` to ``COMMAND``:

* ``REGION_WRITE``, ``DESC_WRITE``, ``TRACK_WRITE``, ``ARB_WRITE`` raise ``valid`` of the
  target's stream the next cycle. Until the target has taken the request (and, for regions
  and descriptors, until the target's verdict arrives: ``regions + 5`` cycles after that for
  a region, six for a descriptor, :func:`~t3hw.spec.contract.csr_verdict_delay`; for a
  tracker request, until the tracker's answer arrives on ``tracker_result``) the group is
  *pending* (``STATUS``): its registers are locked. The arbiter takes every request at once
  (``arbiter_program`` is always ready), so ``ARB`` stays pending for one cycle.
* The tracker answers every request it takes, in order, with one ``tracker_result`` item: its
  verdict (:class:`~t3hw.spec.layouts.TrackResult`) and the entry's state, which this block
  keeps in ``TRACK_RESULT`` until the next answer. A ``TRACK_WRITE`` with ``op = READ`` is
  the tracker's read-back: it changes nothing, and ``TRACK_RESULT`` shows the entry.
* ``REGION_READ``, ``DESC_READ`` load the region or descriptor ``index`` (the staged one)
  from the block's read-back tables into the staging group (``index`` is kept). A command in
  cycle t reads the table's block RAM at the end of t; its data goes straight into a
  register in t + 1 and from there into the staging registers in t + 2
  (:data:`~t3hw.spec.contract.CSR_LOAD_CYCLES`), during which the group is pending.
  Software polls ``STATUS`` (or waits two cycles): a read of the group during the load
  returns it as it was before the command and sets ``busy``, and a write to it is refused
  (``busy``).

Read-back tables: the address map and the DMA keep their tables to themselves, so this block
keeps a copy of each (``regions`` and ``2**cmd_width`` entries, block RAM with a synchronous
read port) and writes it with exactly what the target stored: a write that the target
rejects (one of the target's error events of :data:`~t3hw.spec.contract.CSR_REFUSALS`,
:func:`~t3hw.spec.contract.csr_verdict_delay` cycles after it took the write) is not copied. After reset both copies are cleared, one entry per
cycle, over ``max(regions, 2**cmd_width)`` cycles (``STATUS.sweep``).

The arbiter configuration has no read-back table: the ``ARB_*`` registers reset to the
configuration the arbiter starts with (the parameters ``arbiter_policy``, ``mca_threshold``,
``mca_saturation``, ``mca_window_log2``, ``starvation_limit``; see
:meth:`RegisterMap.reset <t3hw.spec.regmap.RegisterMap.reset>`), so that reading them after
reset shows the configuration in effect; afterwards they hold what software staged, which
the arbiter may have rejected. ``ARB_STATUS`` (the ``arbiter_status`` input) shows what the
arbiter actually uses.

Errors
------
The block holds every sticky error bit: its own (``CSR_ERRORS``) and the targets'. It drives
the targets' ``clear`` all-ones, so a target's ``errors`` register shows each error event for
one cycle, the cycle after it happened; this block registers the events as they enter (with the
target's ``capture``) and ORs them into its sticky copies the cycle after, which software clears
by writing 1s (W1C): a target's sticky bit is set at the end of the second cycle after its
event, its own (``CSR_ERRORS``) at the end of the event's cycle. That is also how the block
tells a rejected region or descriptor write from an accepted one. Its own errors are:

* ``unmapped``: a read or write of an address with no register (or not a multiple of 4);
* ``read_only``: a write to a read-only register (ignored);
* ``bad_command``: an unknown command code (ignored);
* ``busy``: a command whose group is pending, or whose target is busy (``REGION_*`` and the
  reads: the read-back sweep; ``DESC_WRITE``: also the DMA's reset sweep; ``TRACK_WRITE``: the
  tracker's; ``ARB_WRITE`` has no busy target), or a write to a locked staging register (the
  command or write is ignored), or a read of a group that a read command is loading (the
  read returns the group as it was).

First errors, interrupt, counters
---------------------------------
* ``TRACKER_CAPTURE``, ``DMA_CAPTURE``, ``ADDRMAP_CAPTURE``: a target's ``capture`` input
  (the details of the error events its ``errors`` shows in the same cycle) and those events
  are registered when an error event arrives while the target's sticky bits are all clear,
  or all being cleared in that cycle: the first error since software last cleared them all.
  The group holds until the next such event.
* ``irq`` (registered, also ``STATUS.irq``): high while any sticky error bit whose bit in
  the ``*_IRQ_ENABLE`` register of its group is set is high; it rises the cycle after the
  sticky bit and falls the cycle after the clear.
* A counter wider than 32 bits is read ``_LO`` first: that read latches the counter's high
  word into a shadow register, which the ``_HI`` register reads (so LO then HI is one
  snapshot, even across a carry). ``_HI`` read alone shows the shadow of the last ``_LO``
  read (0 after reset).
* ``DEVICE_ID`` (read and write, reset 0) drives the ``device_id`` output.

Timing (``docs/csr.md``): a read returns ``r_data`` three cycles after its strobe
(:data:`~t3hw.spec.contract.CSR_READ_LATENCY`), reading the registers as they are one cycle
after the strobe, and a write, command or W1C clear acts one cycle after its strobe; the
order of accesses is kept.

The arbiter's rejection of a configuration (``ARBITER_ERRORS.bad_config``) is collected like
the other targets' errors.
"""

from types import SimpleNamespace

from amaranth import *
from amaranth.lib import memory, stream, wiring
from amaranth.lib.wiring import In, Out

from t3hw.spec.contract import CSR_REFUSALS, csr_verdict_delay
from t3hw.spec.layouts import (CsrCommand, addrmap_capture_layout, addrmap_errors_layout,
                      addrmap_stats_layout, arbiter_config_layout, arbiter_errors_layout,
                      arbiter_stats_layout, arbiter_status_layout, csr_errors_layout,
                      csr_status_layout, dma_capture_layout, dma_descriptor_layout,
                      dma_errors_layout, dma_program_layout, dma_stats_layout, program_layout,
                      rd_collision_attrs, region_layout, region_program_layout,
                      tracker_capture_layout, tracker_errors_layout, tracker_result_layout,
                      tracker_stats_layout)
from t3hw.spec.params import EngineParams, check_params
from t3hw.spec.regmap import CAPTURES, ERRORS, IRQ_ENABLES, WORD_BITS, Access, RegisterMap
from .csr_bus import BusSignature, mux_tree, or_tree, register_word
from .status import sticky_errors


__all__ = ["BusSignature", "Csr", "register_word"]

#: The targets whose errors and counters the block reads, by port name prefix.
_TARGETS = tuple(name for name in ERRORS if name != "csr")


class Csr(wiring.Component):
    """Register block.

    Parameters
    ----------
    params : EngineParams
        Every layout width; ``regions`` and ``cmd_width`` size the read-back tables.

    Members
    -------
    bus : In(BusSignature(addr_width))
        The register bus (``addr_width`` is :attr:`RegisterMap.addr_width`), registered as
        it enters: a write takes effect at the end of the cycle after its ``w_stb`` cycle;
        ``r_data`` is valid three cycles after ``r_stb`` (``CSR_READ_LATENCY``). One access
        per cycle, no wait states, accesses in order; a read command keeps its group
        pending for :data:`~t3hw.spec.contract.CSR_LOAD_CYCLES` cycles, a write command
        until its target took it and gave its verdict.
    region_program : Out(stream.Signature(region_program_layout))
        To :attr:`t3hw.hw.addrmap.AddrMap.program`. ``valid`` is a register, held until taken.
    dma_program : Out(stream.Signature(dma_program_layout))
        To :attr:`t3hw.hw.dma.Dma.program`. ``valid`` is a register, held until taken.
    tracker_program : Out(stream.Signature(program_layout))
        To :attr:`t3hw.hw.tracker.Tracker.program`. ``valid`` is a register, held until taken.
    arbiter_program : Out(stream.Signature(arbiter_config_layout, always_ready=True))
        To the arbiter's configuration input. ``valid`` for one cycle per ARB_WRITE (the
        ``ARB_*`` registers are locked meanwhile); the payload is the ``ARB_*`` registers,
        which reset to the parameters' configuration.
    tracker_errors, dma_errors, addrmap_errors, arbiter_errors : In(the target's errors layout)
        The targets' ``errors`` ports: error events, one cycle late (see ``*_clear``).
    tracker_clear, dma_clear, addrmap_clear, arbiter_clear : Out(the target's errors layout)
        To the targets' ``clear`` ports: all ones, always.
    tracker_stats, dma_stats, addrmap_stats, arbiter_stats : In(the target's stats layout)
        The targets' counters, read through the bus.
    arbiter_status : In(arbiter_status_layout)
        The arbiter's ``status`` (the policy and T3-MCA threshold in effect), read as
        ``ARB_STATUS``.
    tracker_result : In(stream.Signature(tracker_result_layout, always_ready=True))
        From the tracker's ``result``: its answer to each request it took, in order; the
        last one is ``TRACK_RESULT``.
    tracker_capture, dma_capture, addrmap_capture : In(the target's capture layout)
        The targets' ``capture`` ports: details of the error events on their ``errors`` in
        the same cycle; the first error's go into ``<TARGET>_CAPTURE``.
    tracker_busy, dma_busy : In(1)
        The targets' ``busy`` (reset sweeps).
    dma_idle : In(1)
        The DMA's ``idle``.
    errors : Out(csr_errors_layout)
        This block's own sticky errors (also readable as ``CSR_ERRORS``).
    device_id : Out(device_width)
        The ``DEVICE_ID`` register (reset 0): the device this engine is.
    irq : Out(1)
        The interrupt: a register, high while a sticky error bit whose enable bit is set is
        high (also ``STATUS.irq``).

    Every stream obeys the transfer rules: ``valid`` is a register, and the payload (the
    staging registers) is locked until the transfer. Back-pressure from the DMA or the
    tracker holds the request and locks its group; nothing is dropped. Registers reset:
    the stream ``valid`` bits, the pending and loading flags, the sweep, the sticky errors,
    ``r_data``, ``irq``, the captures, ``TRACK_RESULT``, the counter shadows and the
    read-write registers, which reset to 0, except the ``ARB_*`` registers, which reset to the
    arbiter's configuration after reset (:meth:`RegisterMap.reset
    <t3hw.spec.regmap.RegisterMap.reset>`).
    """

    def __init__(self, params: EngineParams = EngineParams()):
        self._p = check_params(params, self)
        self._map = RegisterMap(params)
        super().__init__({
            "bus":             In(BusSignature(self._map.addr_width)),
            "region_program":  Out(stream.Signature(region_program_layout(params))),
            "dma_program":     Out(stream.Signature(dma_program_layout(params))),
            "tracker_program": Out(stream.Signature(program_layout(params))),
            "tracker_errors":  In(tracker_errors_layout(params)),
            "tracker_clear":   Out(tracker_errors_layout(params)),
            "tracker_stats":   In(tracker_stats_layout(params)),
            "tracker_busy":    In(1),
            "tracker_result":  In(stream.Signature(tracker_result_layout(params),
                                                   always_ready=True)),
            "tracker_capture": In(tracker_capture_layout(params)),
            "dma_errors":      In(dma_errors_layout(params)),
            "dma_clear":       Out(dma_errors_layout(params)),
            "dma_stats":       In(dma_stats_layout(params)),
            "dma_busy":        In(1),
            "dma_idle":        In(1),
            "dma_capture":     In(dma_capture_layout(params)),
            "addrmap_errors":  In(addrmap_errors_layout(params)),
            "addrmap_clear":   Out(addrmap_errors_layout(params)),
            "addrmap_stats":   In(addrmap_stats_layout(params)),
            "addrmap_capture": In(addrmap_capture_layout(params)),
            "arbiter_program": Out(stream.Signature(arbiter_config_layout(params),
                                                    payload_init=self._map.reset("ARB"),
                                                    always_ready=True)),
            "arbiter_errors":  In(arbiter_errors_layout(params)),
            "arbiter_clear":   Out(arbiter_errors_layout(params)),
            "arbiter_stats":   In(arbiter_stats_layout(params)),
            "arbiter_status":  In(arbiter_status_layout(params)),
            "errors":          Out(csr_errors_layout(params)),
            "device_id":       Out(params.device_width),
            "irq":             Out(1),
        })

    @property
    def params(self):
        return self._p

    def elaborate(self, platform):
        # Everything is generated from the register map: one select per register, and for
        # each register field a slice of its group's value (``Field.bit``) tied to a slice of
        # the bus data (``Field.offset``). A group's value is a staging register (the stream
        # payload), a read-write register, a sticky error register, a capture, an input
        # (counters, the arbiter's status) or a constant (``_staging`` says how each staging
        # group waits). The bus read multiplexer selects among registers only (and the
        # inputs, which the targets drive from registers). Built in this order (the order of
        # the calls is the order of the statements, and so of the generated Verilog): the
        # address decode (``_decode``), the read-back tables and their reset sweep
        # (``_tables``), the staging groups' state (``_staging``) and their tables' ports
        # (``_table_ports``), the tracker's answers (``_track_result``),
        # bus writes to read-write registers (``_rw_access``), commands (``_commands``), the
        # sticky errors (``_sticky_errors``), the first-error captures and the interrupt
        # (``_captures``) and the bus read multiplexer with the counter shadows
        # (``_read_mux``). ``set_err`` gathers this block's own error events from all of them.
        m = Module()
        set_err = Signal(csr_errors_layout(self._p))
        bus = self._bus_register(m)
        sel, wr = self._decode(m, bus, set_err)
        tabs = self._tables(m)
        grp = self._staging(tabs)
        self._table_ports(m, tabs, grp)
        result = self._track_result(m, grp)
        regs = self._rw_access(m, bus, sel, wr, grp, set_err)
        self._commands(m, bus, wr, tabs, grp, set_err)
        sticky = self._sticky_errors(m, set_err)
        captures = self._captures(m, sticky, regs)
        self._read_mux(m, bus, sel, tabs, grp, sticky,
                       {**regs, **captures, "TRACK_RESULT": result.as_value()})
        return m

    def _bus_register(self, m):
        """The bus as it enters the block, registered (``addr``, ``w_data``, ``w_stb``,
        ``r_stb``; the strobes reset to 0): everything else decodes and reads from it, so
        that no path runs from the bus's initiator into the block's state (read latency
        :data:`~t3hw.spec.contract.CSR_READ_LATENCY`)."""
        bus = self.bus
        req = SimpleNamespace(addr=Signal.like(bus.addr, name="req_addr"),
                              w_data=Signal.like(bus.w_data, name="req_w_data"),
                              w_stb=Signal(name="req_w_stb"), r_stb=Signal(name="req_r_stb"))
        m.d.sync += [req.addr.eq(bus.addr), req.w_data.eq(bus.w_data),
                     req.w_stb.eq(bus.w_stb), req.r_stb.eq(bus.r_stb)]
        return req

    def _decode(self, m, bus, set_err):
        """The address decode: one select per register (``sel``) and its write strobe
        (``wr``), from the registered bus; sets ``unmapped`` and ``read_only`` in
        ``set_err``."""
        rm = self._map
        # --- decode: one select per register ----------------------------------------------
        # Decoded from the bus as it arrives and registered beside the bus register, so that
        # a write enable is one gate over flip-flops (``req.w_stb & sel``).
        sel = {r.name: Signal(name=f"sel_{r.name.lower()}") for r in rm.registers}
        mapped = Signal()
        m.d.sync += [s.eq(0) for s in sel.values()] + [mapped.eq(0)]
        with m.Switch(self.bus.addr):
            for r in rm.registers:
                with m.Case(r.addr):
                    m.d.sync += [sel[r.name].eq(1), mapped.eq(1)]
        wr = {name: bus.w_stb & s for name, s in sel.items()}
        m.d.comb += [
            set_err.unmapped.eq((bus.r_stb | bus.w_stb) & ~mapped),
            set_err.read_only.eq(Cat(wr[r.name] for r in rm.registers
                                     if r.access == Access.RO).any()),
        ]
        return sel, wr

    def _tables(self, m):
        """The read-back tables (``rtab`` for regions, ``dtab`` for descriptors) and the
        sweep that clears them after reset (``sweep`` while it runs, at entry ``sweep_at``
        of ``n_sweep``)."""
        p = self._p
        # --- read-back tables, cleared after reset ----------------------------------------
        # A table is written only by the sweep and in a group's verdict cycle, and a read
        # command is refused in both (the group is locked, or the sweep is busy), so the read
        # whose data is loaded never meets a write: the attribute tells the synthesis flow
        # (``t3hw/tools/synth_scripts/ecp5.ys``) that no read-before-write bypass is needed.
        no_collision = rd_collision_attrs("excluded")
        m.submodules.region_table = rtab = memory.Memory(
            shape=region_layout(p), depth=p.regions, init=[], attrs=no_collision)
        m.submodules.desc_table = dtab = memory.Memory(
            shape=dma_descriptor_layout(p), depth=p.dma_descriptors, init=[],
            attrs=no_collision)
        sweep = Signal(init=1)
        n_sweep = max(p.regions, p.dma_descriptors)
        sweep_at = Signal(range(n_sweep))
        with m.If(sweep):
            m.d.sync += sweep_at.eq(sweep_at + 1)
            with m.If(sweep_at == n_sweep - 1):
                m.d.sync += sweep.eq(0)
        return SimpleNamespace(rtab=rtab, dtab=dtab, sweep=sweep, sweep_at=sweep_at,
                               n_sweep=n_sweep)

    def _staging(self, tabs):
        """The staging groups (``stage``: group name to its output stream), the groups with a
        read-back table (``tables``: its table, layout and the target's refusal event), the
        state of their writes and read commands, the wait for the tracker's answer
        (``answer``), and when each group is locked (pending)."""
        p = self._p
        # --- staging groups: the stream payloads -------------------------------------------
        stage = {"REGION": self.region_program, "DESC": self.dma_program,
                 "TRACK": self.tracker_program, "ARB": self.arbiter_program}
        # A write is refused by any of the target's refusal bits.
        refused = {g: Cat(events[n] for n in CSR_REFUSALS[g]).any()
                   for g, events in (("REGION", self.addrmap_errors), ("DESC", self.dma_errors))}
        tables = {"REGION": (tabs.rtab, region_layout(p), refused["REGION"]),
                  "DESC":   (tabs.dtab, dma_descriptor_layout(p), refused["DESC"])}
        # The cycles from the target taking a write to its error event showing on its
        # ``errors`` port (csr_verdict_delay): the write waits in ``waiting`` until then. A read
        # command issued in cycle t reads the table at the end of t; ``fetch`` is cycle t + 1,
        # in which the table's data is registered in ``got``, ``load`` is cycle t + 2, in which
        # ``got`` is copied into the staging registers.
        verdict = {g: Signal(name=f"{g.lower()}_verdict") for g in tables}
        waiting = {g: [Signal(name=f"{g.lower()}_waiting{i}")
                       for i in range(csr_verdict_delay(p)[g] - 1)] for g in tables}
        fetch   = {g: Signal(name=f"{g.lower()}_fetch") for g in tables}
        load    = {g: Signal(name=f"{g.lower()}_load") for g in tables}
        loading = {g: fetch[g] | load[g] for g in tables}
        # TRACK, from the tracker taking the request to its answer on ``tracker_result``.
        answer  = {"TRACK": Signal(name="track_answer")}
        # ``locked`` gates every write of a group's staging registers. A group with a table:
        # a register, loaded one cycle ahead with "a write is presented, waits for its
        # verdict, or a read fetches or loads" (:meth:`_commands`), so that the enable of its
        # staging registers (154 bits for a region) does not gather ``valid``, which runs to
        # the target, across the die. The others: the write presented, or TRACK's answer.
        lock = {g: Signal(name=f"{g.lower()}_locked") for g in tables}
        locked = {g: lock[g] if g in lock else s.valid | answer.get(g, 0)
                  for g, s in stage.items()}
        return SimpleNamespace(stage=stage, tables=tables, verdict=verdict, waiting=waiting,
                               lock=lock, fetch=fetch, load=load, loading=loading,
                               answer=answer, locked=locked)

    def _table_ports(self, m, tabs, grp):
        """Each staging stream's ``valid`` cleared when taken, and per read-back table: the
        verdict chain, the write port (the sweep, else the verdict of an accepted write) and
        the read port into ``got`` and from there into the staging registers."""
        for g, port in grp.stage.items():
            with m.If(port.valid & port.ready):
                m.d.sync += port.valid.eq(0)
        for g, (table, layout, rejected) in grp.tables.items():
            payload = grp.stage[g].payload
            chain = [grp.stage[g].valid & grp.stage[g].ready, *grp.waiting[g], grp.verdict[g]]
            m.d.sync += [dst.eq(src) for src, dst in zip(chain, chain[1:])]
            # The target takes the write in cycle t and reports a rejection in
            # t + csr_verdict_delay.
            wp = table.write_port()
            with m.If(tabs.sweep):
                m.d.comb += [wp.addr.eq(tabs.sweep_at), wp.data.eq(0),
                             wp.en.eq(1 if table.depth == tabs.n_sweep
                                      else tabs.sweep_at < table.depth)]
            with m.Else():
                m.d.comb += wp.addr.eq(payload.index)
                for name in layout.members:
                    m.d.comb += wp.data[name].eq(payload[name])
                m.d.comb += wp.en.eq(grp.verdict[g] & ~rejected)
            # Read: the RAM's output goes into nothing but ``got`` (loaded every cycle), and
            # only registers reach the bus read multiplexer.
            rp = table.read_port(domain="sync")
            got = Signal(layout, name=f"{g.lower()}_got", reset_less=True)
            m.d.comb += rp.addr.eq(payload.index)
            m.d.sync += [got.eq(rp.data), grp.fetch[g].eq(0), grp.load[g].eq(grp.fetch[g])]
            with m.If(grp.load[g]):
                m.d.sync += [payload[name].eq(got[name]) for name in layout.members]

    def _track_result(self, m, grp):
        """``TRACK_RESULT``: the tracker's last answer. ``answer`` rises when the tracker takes
        a request and falls with the answer (in the same cycle, it stays low)."""
        port, res = self.tracker_program, self.tracker_result
        result = Signal(tracker_result_layout(self._p), name="track_result")
        with m.If(res.valid):
            m.d.sync += [result.eq(res.payload), grp.answer["TRACK"].eq(0)]
        with m.Elif(port.valid & port.ready):
            m.d.sync += grp.answer["TRACK"].eq(1)
        return result

    def _rw_access(self, m, bus, sel, wr, grp, set_err):
        """Bus writes to the read-write registers: the staging groups' (a write to a locked
        group is refused; a read of a loading group returns the staging register as it was,
        before the load; both set ``busy`` in ``set_err``) and the others' (``DEVICE_ID``, the
        interrupt enables), whose registers this makes. Returns ``{group: value}`` of the
        others; drives ``device_id``."""
        rm = self._map
        regs = {g: Signal(group.layout, init=rm.reset(g), name=g.lower())
                for g, group in rm.groups.items()
                if group.access == Access.RW and g not in grp.stage}
        bits = {**{g: port.payload.as_value() for g, port in grp.stage.items()},
                **{g: reg.as_value() for g, reg in regs.items()}}
        for g, value in bits.items():
            for r in rm.groups[g].registers:
                write = [value[f.bit:f.bit + f.width].eq(bus.w_data[f.offset:f.offset + f.width])
                         for f in r.fields]
                if g in grp.locked:
                    with m.If(wr[r.name] & grp.locked[g]):
                        m.d.comb += set_err.busy.eq(1)
                    with m.Elif(wr[r.name]):
                        m.d.sync += write
                else:
                    with m.If(wr[r.name]):
                        m.d.sync += write
                if g in grp.tables:
                    with m.If(bus.r_stb & sel[r.name] & grp.loading[g]):
                        m.d.comb += set_err.busy.eq(1)
        m.d.comb += self.device_id.eq(regs["DEVICE_ID"].device)
        return {g: reg.as_value() for g, reg in regs.items()}

    def _commands(self, m, bus, wr, tabs, grp, set_err):
        """A write to ``COMMAND``: starts its group's write (the stream's ``valid``) or read
        (``fetch``), unless the group is locked or its target busy (``busy`` in
        ``set_err``); an unknown code sets ``bad_command``."""
        # --- commands -------------------------------------------------------------------------
        field = self._map.by_name["COMMAND"].fields[0]
        code = bus.w_data[field.offset:field.offset + field.width]
        sweep = tabs.sweep
        commands = {
            CsrCommand.REGION_WRITE: ("REGION", sweep),
            CsrCommand.REGION_READ:  ("REGION", sweep),
            CsrCommand.DESC_WRITE:   ("DESC",   sweep | self.dma_busy),
            CsrCommand.DESC_READ:    ("DESC",   sweep),
            CsrCommand.TRACK_WRITE:  ("TRACK",  self.tracker_busy),
            CsrCommand.ARB_WRITE:    ("ARB",    Const(0, 1)),
        }
        reads = (CsrCommand.REGION_READ, CsrCommand.DESC_READ)
        started = {g: Signal(name=f"{g.lower()}_started") for g in grp.lock}
        for g, lock in grp.lock.items():
            # Next cycle's "presented, waiting for a verdict, fetching or loading": a command
            # taken now, or the write presented (taken or not: taken, it waits for its verdict
            # next), or the verdict chain short of its last cycle, or the read fetching now
            # (loading next).
            m.d.sync += lock.eq(started[g] | grp.stage[g].valid | Cat(grp.waiting[g]).any()
                                | grp.fetch[g])
        with m.If(wr["COMMAND"]):
            with m.Switch(code):
                for cmd, (g, busy) in commands.items():
                    with m.Case(cmd):
                        start = grp.fetch[g] if cmd in reads else grp.stage[g].valid
                        with m.If(grp.locked[g] | busy):
                            m.d.comb += set_err.busy.eq(1)
                        with m.Else():
                            m.d.sync += start.eq(1)
                            if g in started:
                                m.d.comb += started[g].eq(1)
                with m.Default():
                    m.d.comb += set_err.bad_command.eq(1)

    def _sticky_errors(self, m, set_err):
        """The sticky error registers (W1C): this block's own (``errors``, from ``set_err``)
        and a copy of each target's, whose ``clear`` is held high. Returns ``{group name:
        (sticky bits, events, the bits software clears this cycle, the first-error decision
        of this cycle)}``; the decision is a register, ``None`` for the block's own group."""
        # A target's events (and its ``capture``, :meth:`_captures`) are registered as they
        # enter, so the first-error decision and the sticky update start from flip-flops
        # beside them: a target's event shows here two cycles after it happened. (A write's
        # refusal is read from the events as they arrive: :meth:`_table_ports`.)
        sticky = {"CSR_ERRORS": (self.errors, set_err)}
        arriving = {}                      # a target's events as they arrive, by group
        for name in _TARGETS:
            given = arriving[ERRORS[name]] = getattr(self, f"{name}_errors")
            events = Signal(given.shape(), name=f"{name}_events")
            m.d.sync += events.eq(given)
            m.d.comb += getattr(self, f"{name}_clear").as_value().eq(-1)
            sticky[ERRORS[name]] = (Signal(given.shape(), name=f"{name}_sticky"), events)
        # The W1C clear of each group is decoded from the bus as it arrives and registered
        # (it acts in the cycle after the strobe, as every write), so that the first-error
        # decision sees a register, not the address decode. The first-error decision of a
        # target's group (an event arrives while no sticky bit stays set through the cycle)
        # is a register too, computed the cycle before from the values those registers take:
        # the capture's enable is one flip-flop.
        for g, (bits, events) in sticky.items():
            clear = Signal(bits.shape().size, name=f"{g.lower()}_clear")
            clear_next = Signal(bits.shape().size, name=f"{g.lower()}_clear_next")
            for r in self._map.groups[g].registers:
                with m.If(self.bus.w_stb & (self.bus.addr == r.addr)):
                    m.d.comb += [clear_next[f.bit:f.bit + f.width]
                                 .eq(self.bus.w_data[f.offset:f.offset + f.width])
                                 for f in r.fields]
            m.d.sync += clear.eq(clear_next)
            sticky_errors(m, bits, clear, events)
            first = None
            if g != "CSR_ERRORS":
                first = Signal(name=f"{g.lower()}_first")
                bits_next = (bits.as_value() & ~clear) | events.as_value()
                m.d.sync += first.eq(arriving[g].as_value().any()
                                     & ~(bits_next & ~clear_next).any())
            sticky[g] = (bits, events, clear, first)
        return sticky

    def _captures(self, m, sticky, regs):
        """The first-error captures (``{group: value}``): a target's ``capture`` and events,
        registered when an event arrives while none of its sticky bits stays set through this
        cycle (all clear, or all being cleared); and ``irq``, from the sticky bits and the
        enables (``regs``)."""
        captures = {}
        for name, g in CAPTURES.items():
            bits, events, clear, first = sticky[ERRORS[name]]
            given = Signal.like(getattr(self, f"{name}_capture"), name=f"{name}_given")
            m.d.sync += given.eq(getattr(self, f"{name}_capture"))    # beside the events
            cap = Signal(self._map.groups[g].layout, name=g.lower())
            with m.If(first):
                m.d.sync += [cap[field].eq(given[field]) for field in given.shape().members]
                m.d.sync += cap.events.eq(events)
            captures[g] = cap.as_value()
        m.d.sync += self.irq.eq(Cat((bits.as_value() & regs[IRQ_ENABLES[g]]).any()
                                    for g, (bits, *_) in sticky.items()).any())
        return captures

    def _read_mux(self, m, bus, sel, tabs, grp, sticky, more):
        """The bus read of every register's word (:func:`register_word`; ``more``: the groups
        made elsewhere). A counter's ``_HI`` reads the shadow its ``_LO`` read loaded."""
        p, rm = self._p, self._map
        locked = grp.locked
        status = Signal(csr_status_layout(p))
        m.d.comb += [
            status.tracker_busy.eq(self.tracker_busy),
            status.dma_busy.eq(self.dma_busy),
            status.dma_idle.eq(self.dma_idle),
            status.sweep.eq(tabs.sweep),
            status.region_pending.eq(locked["REGION"]),
            status.desc_pending.eq(locked["DESC"]),
            status.track_pending.eq(locked["TRACK"]),
            status.arb_pending.eq(locked["ARB"]),
            status.irq.eq(self.irq),
        ]
        value = {
            "ID":      Const(rm.groups["ID"].codec.pack(**rm.constant("ID")),
                             rm.groups["ID"].codec.width),
            "CONFIG":  Const(rm.groups["CONFIG"].codec.pack(**rm.constant("CONFIG")),
                             rm.groups["CONFIG"].codec.width),
            "STATUS":  status.as_value(),
            "COMMAND": Const(0, rm.by_name["COMMAND"].fields[0].width),
            "ARB_STATUS": self.arbiter_status.as_value(),
            **{name.upper(): getattr(self, f"{name}_stats").as_value() for name in _TARGETS},
            **{g: port.payload.as_value() for g, port in grp.stage.items()},
            **{g: bits.as_value() for g, (bits, *_) in sticky.items()},
            **more,
        }
        # Every register's word (empty words read 0, as does an unaligned address).
        words = [None] * (1 << (rm.addr_width - 2))
        for r in rm.registers:
            words[r.addr >> 2] = register_word(r, value[r.group])
        # 64-bit counters: the read of _LO loads the high word into the shadow _HI reads.
        for lo, hi in rm.shadowed().items():
            (f,) = rm.by_name[hi].fields
            shadow = Signal(f.width, name=f"{hi.lower()}_shadow")
            with m.If(bus.r_stb & sel[lo]):
                m.d.sync += shadow.eq(value[rm.by_name[hi].group][f.bit:f.bit + f.width])
            words[rm.by_name[hi].addr >> 2] = register_word(rm.by_name[hi], Cat(
                Const(0, f.bit), shadow))
        # Two registered stages: the word in its 16-word section of the map (0x40-byte
        # windows, mostly one block's registers each), an OR of the words the one-hot
        # selects pick (a select fans out to one word; a multiplexer tree's address bits
        # fanned out to every section's 32 bits); then the section, by a 2:1 tree.
        names = {r.addr >> 2: r.name for r in rm.registers}
        lo = 4
        parts, sec_q = [], Signal(len(bus.addr) - 2 - lo, name="read_section")
        bad_q, read_q = Signal(name="read_unaligned"), Signal(name="read_pending")
        for k in range(0, len(words), 1 << lo):
            section = words[k:k + (1 << lo)]
            if all(w is None for w in section):
                parts.append(None)
                continue
            part = Signal(WORD_BITS, name=f"read_part{k >> lo}")
            with m.If(bus.r_stb):
                m.d.sync += part.eq(or_tree([Mux(sel[names[k + i]], w, 0)
                                             for i, w in enumerate(section) if w is not None]))
            parts.append(part)
        m.d.sync += read_q.eq(bus.r_stb)
        with m.If(bus.r_stb):
            m.d.sync += [sec_q.eq(bus.addr[2 + lo:]), bad_q.eq(bus.addr[:2].any())]
        with m.If(read_q):
            m.d.sync += self.bus.r_data.eq(Mux(bad_q, 0, mux_tree(parts, sec_q)))
