# SPDX-License-Identifier: Apache-2.0
"""Reference model of the register block (:mod:`t3hw.hw.csr`) and the blocks behind it.

* :class:`CsrModel`: the register file with the RTL's cycle timing (staging groups, pending
  commands, read-back tables, sticky errors, first-error captures, the tracker's answer,
  interrupt enables and ``irq``, ``DEVICE_ID``, counter shadows, ``r_data``), stepped once
  per clock.
* :class:`Targets`: the address map, DMA and tracker behind the block, as their reference
  models (:mod:`sim_models.addrmap`, :mod:`sim_models.dma`, :mod:`sim_models.tracker`), and
  the arbiter's configuration (:class:`ArbiterConfig`, with the arbiter's check
  :func:`sim_models.arbiter.config_ok`): every request the block transfers is applied to its
  model, and the errors the models raise come back as error events the next cycle (the RTL
  targets' ``clear`` is held high, so their ``errors`` ports carry events); the tracker
  answers each request (:meth:`Targets.answer`) after a delay the caller chooses.
* :class:`ModelBus`: a bus for :class:`t3hw.sw.driver.Driver` with no RTL: each access is one
  cycle of :class:`CsrModel` over :class:`Targets`.

The environment that drives the RTL (random register traffic and scripted accesses, scored
against :class:`CsrModel` every cycle) and the scenarios are in :mod:`t3hw.verif.csr_env`.

Register names, addresses and fields come from :class:`t3hw.spec.regmap.RegisterMap`.
"""

from collections import deque
from dataclasses import dataclass, replace

from t3hw.spec.contract import (CSR_LOAD_CYCLES as LOAD_CYCLES, CSR_READ_LATENCY,
                                CSR_REFUSALS, csr_verdict_delay, addrmap_program_cycles,
                                dma_program_cycles)
from t3hw.spec.layouts import (MCA_POLICIES, ArbPolicy, Codec, CsrCommand,
                          addrmap_errors_layout, arbiter_errors_layout, arbiter_stats_layout,
                          arbiter_status_layout, csr_status_layout, dma_descriptor_layout,
                          dma_errors_layout, region_layout, tracker_result_layout)
from t3hw.spec.params import EngineParams
from t3hw.spec.regmap import CAPTURES, COUNTERS, ERRORS, IRQ_ENABLES, Access, RegisterMap

from .addrmap import AddrMapModel
from .arbiter import config_ok
from .dma import DmaModel
from .env import BlockModel
from .tracker import TrackerModel


__all__ = ["STAGING", "ALWAYS_READY", "COMMANDS", "TARGETS", "STICKY", "STATS", "CAPTURE",
           "CsrInputs", "CsrModel", "ArbiterConfig", "Targets", "ModelBus"]


#: Staging groups, and the stream port each one feeds.
STAGING = {"REGION": "region_program", "DESC": "dma_program", "TRACK": "tracker_program",
           "ARB": "arbiter_program"}

#: Staging groups whose target is always ready (their stream has no ``ready`` port).
ALWAYS_READY = ("ARB",)

#: Command -> (staging group, whether it loads the group from its read-back table).
COMMANDS = {
    CsrCommand.REGION_WRITE: ("REGION", False),
    CsrCommand.REGION_READ:  ("REGION", True),
    CsrCommand.DESC_WRITE:   ("DESC",   False),
    CsrCommand.DESC_READ:    ("DESC",   True),
    CsrCommand.TRACK_WRITE:  ("TRACK",  False),
    CsrCommand.ARB_WRITE:    ("ARB",    False),
}

#: The targets behind the block, named as in its ports (``<target>_errors``, ...).
TARGETS = tuple(t for t in ERRORS if t != "csr")

#: Sticky error groups -> the input that carries their events (None: the block's own).
STICKY = {"CSR_ERRORS": None, **{ERRORS[t]: f"{t}_errors" for t in TARGETS}}

#: Counter groups -> the input that carries them.
STATS = {COUNTERS[t]: f"{t}_stats" for t in TARGETS}

#: First-error capture groups -> (the input of the details, the error group).
CAPTURE = {g: (f"{t}_capture", ERRORS[t]) for t, g in CAPTURES.items()}


@dataclass
class CsrInputs:
    """The inputs of :class:`t3hw.hw.csr.Csr` during one cycle (port names without ``bus__``)."""
    addr:           int = 0
    w_data:         int = 0
    w_stb:          int = 0
    r_stb:          int = 0
    region_ready:   int = 1
    dma_ready:      int = 1
    tracker_ready:  int = 1
    tracker_errors: int = 0
    dma_errors:     int = 0
    addrmap_errors: int = 0
    arbiter_errors: int = 0
    tracker_stats:  int = 0
    dma_stats:      int = 0
    addrmap_stats:  int = 0
    arbiter_stats:  int = 0
    arbiter_status: int = 0
    tracker_busy:   int = 0
    dma_busy:       int = 0
    dma_idle:       int = 1
    #: The packed ``tracker_result`` payload while ``valid``, else None.
    tracker_result: int = None
    tracker_capture: int = 0
    dma_capture:    int = 0
    addrmap_capture: int = 0


#: The inputs the block registers before its sticky bits and captures see them.
_LATE = tuple(port for port in STICKY.values() if port is not None) + tuple(
    port for port, _ in CAPTURE.values())

#: The bus fields of :class:`CsrInputs` with no access (the bus register after reset).
_IDLE_BUS = {"addr": 0, "w_data": 0, "w_stb": 0, "r_stb": 0}


class CsrModel:
    """The register block, cycle by cycle.

    :meth:`outputs` gives what the RTL shows during the current cycle; :meth:`step` takes that
    cycle's :class:`CsrInputs` and advances to the next cycle. A new model is the block just
    out of reset (its read-back sweep starting).

    Parameters
    ----------
    params : EngineParams, optional

    Attributes
    ----------
    map : RegisterMap
    staging : dict of str to int
        Packed value of each staging group (``REGION``, ``DESC``, ``TRACK``, ``ARB``).
    tables : dict of str to list of dict
        The read-back tables (``REGION``, ``DESC``): fields of every entry.
    sticky : dict of str to int
        Packed sticky errors of each error group.
    regs : dict of str to int
        Packed value of each read-write group that is not staging (``DEVICE_ID``, the
        interrupt enables).
    captured : dict of str to int
        Packed first-error capture groups.
    result : int
        Packed ``TRACK_RESULT``.
    shadow : dict of str to int
        The counter shadows, by ``_HI`` register name.
    irq : bool
    """

    def __init__(self, params: EngineParams = None):
        self.params = p = params if params is not None else EngineParams()
        self.map = RegisterMap(p)
        self.codec = {name: g.codec for name, g in self.map.groups.items()}
        entry = {"REGION": region_layout(p), "DESC": dma_descriptor_layout(p)}
        self.entry_names = {g: list(layout.members) for g, layout in entry.items()}
        self.tables = {g: [dict.fromkeys(self.entry_names[g], 0) for _ in range(n)]
                       for g, n in (("REGION", p.regions), ("DESC", p.dma_descriptors))}
        self.reject = {}
        for g, layout in (("REGION", addrmap_errors_layout(p)), ("DESC", dma_errors_layout(p))):
            codec = Codec(layout)
            self.reject[g] = codec.pack(**dict.fromkeys(CSR_REFUSALS[g], 1))
        self.status_codec = Codec(csr_status_layout(p))
        self.r_data = 0
        self.sticky = dict.fromkeys(STICKY, 0)
        self.staging = {g: self.codec[g].pack(**self.map.reset(g)) for g in STAGING}
        self.valid = dict.fromkeys(STAGING, False)
        self.verdict = dict.fromkeys(self.tables, False)
        # writes taken, waiting for their verdict: one flag per cycle still to wait
        self.waiting = {g: [False] * (csr_verdict_delay(p)[g] - 1) for g in self.tables}
        # read commands under way: the entry read, one slot per cycle of the load (the last
        # slot's entry goes into the staging registers at the end of this cycle), or None
        self.loads = {g: [None] * LOAD_CYCLES for g in self.tables}
        self.sweep_left = max(p.regions, p.dma_descriptors)
        self.regs = {g: self.codec[g].pack(**self.map.reset(g))
                     for g, group in self.map.groups.items()
                     if group.access == Access.RW and g not in STAGING}
        self.captured = dict.fromkeys(CAPTURE, 0)
        self.result = 0
        self.answer = False         # TRACK waits for the tracker's answer
        self.shadowed = self.map.shadowed()
        self.shadow = dict.fromkeys(self.shadowed.values(), 0)
        self.irq = False
        # The bus register: the access the block acts on this cycle is the one of the cycle
        # before (``CSR_READ_LATENCY``: the RTL registers the bus as it enters).
        self.bus = dict(_IDLE_BUS)
        # The read multiplexer's first stage: the word read in the cycle before, or None.
        self.read_part = None
        # The targets' error events and captures of the cycle before (the block's registers).
        self.late = dict.fromkeys(_LATE, 0)

    # -- state during the current cycle ----------------------------------------------------
    @property
    def sweeping(self):
        """``STATUS.sweep``: the read-back tables are being cleared."""
        return self.sweep_left > 0

    def loading(self, group):
        """A read command is loading the group from its read-back table (the group is
        pending; a read of its registers returns them as before the load, and is ``busy``)."""
        return any(e is not None for e in self.loads.get(group, ()))

    def locked(self, group):
        """The group is pending (``STATUS.*_pending``): its registers are locked."""
        return (self.valid[group] or self.verdict.get(group, False)
                or any(self.waiting.get(group, ())) or self.loading(group)
                or (group == "TRACK" and self.answer))

    def pending(self):
        """Some command is pending (a load included), an access is in the bus register or a
        read in the multiplexer, or a target's error event in the block's input register."""
        return (any(map(self.locked, STAGING)) or bool(self.bus["w_stb"])
                or bool(self.bus["r_stb"]) or self.read_part is not None
                or any(self.late[port] for port in STICKY.values() if port is not None))

    def status(self, ins):
        """The packed ``STATUS`` register this cycle."""
        return self.status_codec.pack(
            tracker_busy=ins.tracker_busy, dma_busy=ins.dma_busy, dma_idle=ins.dma_idle,
            sweep=int(self.sweeping), region_pending=int(self.locked("REGION")),
            desc_pending=int(self.locked("DESC")), track_pending=int(self.locked("TRACK")),
            arb_pending=int(self.locked("ARB")), irq=int(self.irq))

    def value(self, group, ins):
        """A group's packed layout value as the bus reads it this cycle."""
        if group in ("ID", "CONFIG"):
            return self.codec[group].pack(**self.map.constant(group))
        if group == "STATUS":
            return self.status(ins)
        if group == "COMMAND":
            return 0
        if group == "ARB_STATUS":
            return ins.arbiter_status
        if group in STICKY:
            return self.sticky[group]
        if group in STAGING:
            return self.staging[group]
        if group in self.regs:
            return self.regs[group]
        if group in CAPTURE:
            return self.captured[group]
        if group == "TRACK_RESULT":
            return self.result
        return getattr(ins, STATS[group])

    def read(self, reg, ins):
        """The word a read of register ``reg`` returns this cycle (a counter's ``_HI``: its
        shadow)."""
        if reg.name in self.shadow:
            return self.shadow[reg.name]
        return reg.extract(self.value(reg.group, ins))

    def outputs(self):
        """The outputs during this cycle: ``r_data``, ``errors`` (packed), ``irq``,
        ``device_id`` and, per staging group, the packed payload of its stream while
        ``valid``, else None."""
        device = self.codec["DEVICE_ID"].unpack(self.regs["DEVICE_ID"])["device"]
        return {"r_data": self.r_data, "errors": self.sticky["CSR_ERRORS"],
                "irq": int(self.irq), "device_id": device,
                **{g: self.staging[g] if self.valid[g] else None for g in STAGING}}

    # -- one clock -------------------------------------------------------------------------
    def _busy(self, group, is_read, ins):
        if group == "ARB":
            return False
        if group == "TRACK":
            return bool(ins.tracker_busy)
        return self.sweeping or (group == "DESC" and not is_read and bool(ins.dma_busy))

    def step(self, ins: CsrInputs):
        """Advance one clock with this cycle's inputs.

        Returns
        -------
        dict of str to int
            The staging groups whose request the target took this cycle, with its payload.
        """
        rm = self.map
        # The block acts on the bus access it registered the cycle before.
        ins, self.bus = replace(ins, **self.bus), {k: getattr(ins, k) for k in _IDLE_BUS}
        ready = {**dict.fromkeys(ALWAYS_READY, True), "REGION": bool(ins.region_ready),
                 "DESC": bool(ins.dma_ready),
                 "TRACK": bool(ins.tracker_ready)}
        taken = {g: self.staging[g] for g in STAGING if self.valid[g] and ready[g]}
        errs = set()
        reg = None
        if ins.r_stb or ins.w_stb:
            reg = rm.by_addr.get(ins.addr)
            if reg is None:
                errs.add("unmapped")
        # ``r_data`` loads the first stage's word of the cycle before (CSR_READ_LATENCY).
        r_data = self.r_data if self.read_part is None else self.read_part
        read_part = None
        shadow = dict(self.shadow)
        if ins.r_stb:
            read_part = self.read(reg, ins) if reg else 0
            if reg is not None and self.loading(reg.group):
                errs.add("busy")
            if reg is not None and reg.name in self.shadowed:
                hi = rm.by_name[self.shadowed[reg.name]]
                shadow[hi.name] = hi.extract(self.value(reg.group, ins))
        staging = dict(self.staging)
        for g, loads in self.loads.items():
            if loads[-1] is not None:
                codec = self.codec[g]
                staging[g] = codec.pack(**{**codec.unpack(staging[g]), **loads[-1]})
        valid = {g: self.valid[g] and g not in taken for g in STAGING}
        regs = dict(self.regs)
        fetch = dict.fromkeys(self.tables)
        clear = dict.fromkeys(STICKY, 0)
        if ins.w_stb and reg is not None:
            g = reg.group
            if reg.access == Access.RO:
                errs.add("read_only")
            elif reg.access == Access.W1C:
                clear[g] = reg.insert(0, ins.w_data)
            elif reg.access == Access.RW and g not in STAGING:
                regs[g] = reg.insert(regs[g], ins.w_data)
            elif reg.access == Access.RW:
                if self.locked(g):
                    errs.add("busy")
                else:
                    staging[g] = reg.insert(staging[g], ins.w_data)
            else:
                code = self.codec["COMMAND"].unpack(reg.insert(0, ins.w_data))["command"]
                if code not in {c.value for c in COMMANDS}:
                    errs.add("bad_command")
                else:
                    group, is_read = COMMANDS[CsrCommand(code)]
                    if self.locked(group) or self._busy(group, is_read, ins):
                        errs.add("busy")
                    elif is_read:
                        index = self.codec[group].unpack(self.staging[group])["index"]
                        fetch[group] = dict(self.tables[group][index])
                    else:
                        valid[group] = True
        if not self.sweeping:
            for g, table in self.tables.items():
                rejected = getattr(ins, "addrmap_errors" if g == "REGION" else "dma_errors") \
                    & self.reject[g]
                if self.verdict[g] and not rejected:
                    fields = self.codec[g].unpack(self.staging[g])
                    table[fields["index"]] = {n: fields[n] for n in self.entry_names[g]}
        # The targets' events and captures, as the block registered them the cycle before.
        late, self.late = self.late, {k: getattr(ins, k) for k in _LATE}
        events = {"CSR_ERRORS": self.codec["CSR_ERRORS"].pack(**dict.fromkeys(errs, 1))}
        for g, port in STICKY.items():
            if port is not None:
                events[g] = late[port]
        # First errors: events while no sticky bit of the group stays set through this cycle.
        for g, (port, errors) in CAPTURE.items():
            if events[errors] and not self.sticky[errors] & ~clear[errors]:
                # The group's layout is the capture input's, then ``events``.
                at = self.map.groups[g].layout["events"].offset
                self.captured[g] = (late[port] & ((1 << at) - 1)) | events[errors] << at
        self.irq = any(self.sticky[g] & self.regs[IRQ_ENABLES[g]] for g in STICKY)
        for g in STICKY:
            self.sticky[g] = (self.sticky[g] & ~clear[g]) | events[g]
        if ins.tracker_result is not None:
            self.result = ins.tracker_result
        self.answer = ins.tracker_result is None and (self.answer or "TRACK" in taken)
        self.r_data, self.read_part, self.shadow, self.regs = r_data, read_part, shadow, regs
        self.staging, self.valid = staging, valid
        for g, loads in self.loads.items():
            self.loads[g] = [fetch[g], *loads[:-1]]
        for g in self.tables:
            chain = [g in taken, *self.waiting[g]]
            self.waiting[g], self.verdict[g] = chain[:-1], chain[-1]
        if self.sweep_left:
            self.sweep_left -= 1
        return taken


class ArbiterConfig(BlockModel):
    """The arbiter as the register block sees it: the configuration in effect, the check of a
    new one (:func:`sim_models.arbiter.config_ok`), its error bits, counters and status.

    Parameters
    ----------
    params : EngineParams, optional

    Attributes
    ----------
    config : dict
        The configuration in effect (fields of :func:`~t3hw.spec.layouts.arbiter_config_layout`);
        after reset the parameters' (:meth:`t3hw.spec.regmap.RegisterMap.reset`).
    """

    def __init__(self, params: EngineParams = None):
        super().__init__(params, arbiter_errors_layout, arbiter_stats_layout)
        self.config = RegisterMap(self.params).reset("ARB")
        self.status_codec = Codec(arbiter_status_layout(self.params))

    def program(self, **config):
        """Use ``config`` if the arbiter accepts it; else raise ``bad_config`` and keep the
        configuration in effect."""
        if config_ok(config):
            self.config = dict(config)
        else:
            self.errors["bad_config"] = True

    @staticmethod
    def measuring(cfg):
        """``status.measuring`` of this stand-in under configuration ``cfg``: while T3-MCA or
        T3_MCA_RR derives its threshold (threshold 0), simplified to "always then"."""
        return int(ArbPolicy(cfg["policy"]) in MCA_POLICIES and cfg["threshold"] == 0)

    def status(self):
        """The packed ``status`` port: the policy, the programmed threshold and
        :meth:`measuring`."""
        cfg = self.config
        return self.status_codec.pack(policy=cfg["policy"], threshold=cfg["threshold"],
                                      measuring=self.measuring(cfg))


class Targets:
    """The address map, DMA, tracker and arbiter behind the register block, as reference
    models.

    Parameters
    ----------
    params : EngineParams
    tracker, dma, addrmap, arbiter : optional
        The models to program (new ones by default; ``arbiter`` is an
        :class:`ArbiterConfig`).

    :meth:`step` applies the requests the block transferred in a cycle to the models; the
    errors the models raise (from those requests or from anything else done to the models)
    are the error events of the next cycle (:meth:`inputs`), and the models' errors are
    cleared, as the RTL targets' are by their ``clear`` held high. The tracker's answer to a
    request (:meth:`answer`) is on ``tracker_result`` ``delay`` cycles after it was taken
    (:meth:`step`'s argument, at least 1), one answer per cycle, in order.
    """

    def __init__(self, params, *, tracker=None, dma=None, addrmap=None, arbiter=None):
        self.tracker = tracker if tracker is not None else TrackerModel(params)
        self.dma = dma if dma is not None else DmaModel(params)
        self.addrmap = addrmap if addrmap is not None else AddrMapModel(params)
        self.arbiter = arbiter if arbiter is not None else ArbiterConfig(params)
        self.map = RegisterMap(params)
        self.models = {"tracker": self.tracker, "dma": self.dma, "addrmap": self.addrmap,
                       "arbiter": self.arbiter}
        assert tuple(self.models) == TARGETS
        self.events = dict.fromkeys(self.models, 0)
        self.log = []               # (group, fields) of every request transferred
        # A target that checks a request a cycle after taking it (the address map's region
        # writes: csr_verdict_delay) applies it late: requests wait here, one slot per cycle.
        delay = csr_verdict_delay(params)
        self.late = {g: deque([None] * (delay.get(g, 1) - 1))
                     for g in ("REGION", "DESC", "TRACK", "ARB")}
        self.answers = deque()      # (cycle due, packed tracker result), in order
        # The address map (the DMA) takes no region (descriptor) write for this many cycles
        # after one.
        self.gap = {"REGION": addrmap_program_cycles(params) - 1,
                    "DESC": dma_program_cycles(params) - 1}
        self.gap_left = dict.fromkeys(self.gap, 0)
        self.now = 0
        self.result_codec = Codec(tracker_result_layout(params))

    def inputs(self):
        """Error events, counters, DMA idleness and the arbiter's status as
        :class:`CsrInputs` fields."""
        ins = {f"{name}_errors": bits for name, bits in self.events.items()}
        for name, model in self.models.items():
            ins[f"{name}_stats"] = model.stats_codec.pack(**model.stats)
        d = self.dma
        ins["dma_idle"] = int(not (d.queue or d.bursts_left or d.outstanding))
        ins["arbiter_status"] = self.arbiter.status()
        due = self.answers and self.answers[0][0] <= self.now
        ins["tracker_result"] = self.answers[0][1] if due else None
        ins["region_ready"] = int(self.gap_left["REGION"] == 0)
        ins["dma_ready"] = int(self.gap_left["DESC"] == 0)
        return ins

    def answer(self, op, tile, threshold=0, cmd=0, rearm=0):
        """Apply a tracker request to the tracker model; return the tracker's packed answer
        (:meth:`sim_models.tracker.TrackerModel.answer`; ``pending`` is 0: the DMA takes
        every trigger at once here)."""
        return self.result_codec.pack(**self.tracker.answer(op, tile, threshold, cmd, rearm))

    def quiet(self):
        """No error event is on its way, and no request waits to be applied."""
        return not any(self.events.values()) and not self.answers and not any(
            x is not None for wait in self.late.values() for x in wait)

    def step(self, taken, delay=1):
        """Apply the requests taken this cycle (``{staging group: packed payload}``); the
        tracker's answer to a request is due ``delay`` cycles from now (at least 1)."""
        if not isinstance(delay, int) or delay < 1:
            raise ValueError(f"delay must be a positive integer, not {delay!r}")
        if self.answers and self.answers[0][0] <= self.now:
            self.answers.popleft()                      # shown this cycle
        last = self.answers[-1][0] if self.answers else self.now

        def track(**fields):
            self.answers.append((max(self.now + delay, last + 1), self.answer(**fields)))

        apply = {"REGION": self.addrmap.program, "DESC": self.dma.program,
                 "TRACK": track, "ARB": self.arbiter.program}
        for g, gap in self.gap.items():
            self.gap_left[g] = gap if g in taken else max(0, self.gap_left[g] - 1)
        for g, wait in self.late.items():
            wait.append(taken.get(g))
            payload = wait.popleft()
            if payload is None:
                continue
            fields = self.map.groups[g].codec.unpack(payload)
            self.log.append((g, fields))
            apply[g](**fields)
        for name, model in self.models.items():
            self.events[name] = model.errors_codec.pack(
                **{k: int(v) for k, v in model.errors.items()})
            for k in model.errors:
                model.errors[k] = False
        self.now += 1


class ModelBus:
    """A bus for :class:`t3hw.sw.driver.Driver` over :class:`CsrModel` and :class:`Targets`.

    A write is one clock of the model, a read ``CSR_READ_LATENCY`` (its strobe, then the
    clocks of the block's bus register and read stage; it returns the ``r_data`` that
    loaded). With
    ``settle``, a write is followed by idle clocks until no command is pending and no error
    event is on its way, so the driver sees the models in their final state; without, the
    next access comes in the very next clock, the fastest a bus can go, and the driver must
    wait for the block itself. The read-back sweep is run at construction.

    Parameters
    ----------
    params : EngineParams, optional
    settle : bool
        Idle after each write until nothing is pending (default).
    tracker, dma, addrmap, arbiter : optional
        Reference models to program (see :class:`Targets`).

    Attributes
    ----------
    csr : CsrModel
    targets : Targets
    """

    def __init__(self, params: EngineParams = None, *, settle=True, **models):
        if not isinstance(settle, bool):
            raise TypeError(f"settle must be a bool, not {settle!r}")
        self.csr = CsrModel(params)
        self.targets = Targets(self.csr.params, **models)
        self.settle = settle
        while self.csr.sweeping:
            self._clock()

    def _clock(self, **bus):
        self.targets.step(self.csr.step(CsrInputs(**bus, **self.targets.inputs())))

    async def write(self, addr, value):
        """Write ``value`` to byte address ``addr``."""
        self._clock(addr=addr, w_data=value, w_stb=1)
        while self.settle and (self.csr.pending() or not self.targets.quiet()):
            self._clock()

    async def read(self, addr):
        """Read byte address ``addr``."""
        self._clock(addr=addr, r_stb=1)
        for _ in range(CSR_READ_LATENCY - 1):    # the bus register, the multiplexer's stage
            self._clock()
        return self.csr.r_data
