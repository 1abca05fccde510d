# SPDX-License-Identifier: Apache-2.0
"""Reference model of the register block (:mod:`t3hw.hw.csr`), the blocks behind it, and the
environments that drive it.

* :class:`CsrModel`: the register file with the RTL's cycle timing (staging groups, pending
  commands, read-back tables, sticky errors, ``r_data``), stepped once per clock.
* :class:`Targets`: the address map, DMA and tracker behind the block, as their reference
  models (:mod:`sim_models.addrmap`, :mod:`sim_models.dma`, :mod:`sim_models.tracker`), and
  the arbiter's configuration (:class:`ArbiterConfig`, with the arbiter's check
  :func:`sim_models.arbiter.config_ok`): every request the block transfers is applied to its
  model, and the errors the models raise come back as error events the next cycle (the RTL
  targets' ``clear`` is held high, so their ``errors`` ports carry events).
* :class:`ModelBus`: a bus for :class:`t3hw.sw.driver.Driver` with no RTL: each access is one
  cycle of :class:`CsrModel` over :class:`Targets`.
* :class:`CsrEnv`: seeded random register traffic (and scripted accesses) for the RTL, with a
  scoreboard that compares ``r_data``, the sticky errors, the clears and every field of the
  four program streams with :class:`CsrModel` every cycle.
* Scenarios shared by the amaranth.sim tests and the cocotb testbench: :func:`drain`,
  :func:`every_register`, :func:`provoke_errors`, :func:`readback`.

Register names, addresses and fields come from :class:`t3hw.spec.regmap.RegisterMap`.
"""

from collections import deque
from dataclasses import dataclass, fields as dc_fields

from t3hw.spec.contract import CSR_LOAD_CYCLES as LOAD_CYCLES, CSR_VERDICT_DELAY as VERDICT_DELAY
from t3hw.spec.layouts import (ArbPolicy, Codec, CsrCommand, addrmap_errors_layout,
                          arbiter_errors_layout, arbiter_stats_layout, arbiter_status_layout,
                          csr_status_layout, dma_descriptor_layout, dma_errors_layout,
                          region_layout)
from t3hw.spec.params import EngineParams
from t3hw.spec.regmap import MAGIC, Access, RegisterMap

from .addrmap import AddrMapModel
from .arbiter import MAX_WINDOW_LOG2, config_ok
from .dma import DmaModel
from .env import BlockModel, Stall, StreamEnv
from .tracker import TrackerModel


__all__ = ["STAGING", "COMMANDS", "CsrInputs", "CsrModel", "ArbiterConfig", "Targets",
           "ModelBus", "CsrEnv", "drain", "run_script", "every_register", "provoke_errors",
           "readback"]


#: Staging groups, and the stream port each one feeds.
STAGING = {"REGION": "region_program", "DESC": "dma_program", "TRACK": "tracker_program",
           "ARB": "arbiter_program"}

#: Staging groups whose target is always ready (their stream has no ``ready`` port).
_ALWAYS_READY = ("REGION", "ARB")

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
_TARGETS = ("tracker", "dma", "addrmap", "arbiter")

#: Sticky error groups -> the input that carries their events (None: the block's own).
_STICKY = {"CSR_ERRORS": None, **{f"{t.upper()}_ERRORS": f"{t}_errors" for t in _TARGETS}}

#: Counter groups -> the input that carries them.
_STATS = {t.upper(): f"{t}_stats" for t in _TARGETS}


@dataclass
class CsrInputs:
    """The inputs of :class:`t3hw.hw.csr.Csr` during one cycle (port names without ``bus__``)."""
    addr:           int = 0
    w_data:         int = 0
    w_stb:          int = 0
    r_stb:          int = 0
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
    """

    def __init__(self, params: EngineParams = None):
        self.params = p = params if params is not None else EngineParams()
        self.map = RegisterMap(p)
        self.codec = {name: g.codec for name, g in self.map.groups.items()}
        entry = {"REGION": region_layout(p), "DESC": dma_descriptor_layout(p)}
        self.entry_names = {g: list(layout.members) for g, layout in entry.items()}
        self.tables = {g: [dict.fromkeys(self.entry_names[g], 0) for _ in range(n)]
                       for g, n in (("REGION", p.regions), ("DESC", p.dma_descriptors))}
        self.reject = {"REGION": Codec(addrmap_errors_layout(p)).pack(bad_region=1, overlap=1),
                       "DESC":   Codec(dma_errors_layout(p)).pack(bad_program=1)}
        self.status_codec = Codec(csr_status_layout(p))
        self.r_data = 0
        self.sticky = dict.fromkeys(_STICKY, 0)
        self.staging = {g: self.codec[g].pack(**self.map.reset(g)) for g in STAGING}
        self.valid = dict.fromkeys(STAGING, False)
        self.verdict = dict.fromkeys(self.tables, False)
        # writes taken, waiting for their verdict: one flag per cycle still to wait
        self.waiting = {g: [False] * (VERDICT_DELAY[g] - 1) for g in self.tables}
        # read commands under way: the entry read, one slot per cycle of the load (the last
        # slot's entry goes into the staging registers at the end of this cycle), or None
        self.loads = {g: [None] * LOAD_CYCLES for g in self.tables}
        self.sweep_left = max(p.regions, p.dma_descriptors)

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
                or any(self.waiting.get(group, ())) or self.loading(group))

    def pending(self):
        """Some command is pending (a load included)."""
        return any(map(self.locked, STAGING))

    def status(self, ins):
        """The packed ``STATUS`` register this cycle."""
        return self.status_codec.pack(
            tracker_busy=ins.tracker_busy, dma_busy=ins.dma_busy, dma_idle=ins.dma_idle,
            sweep=int(self.sweeping), region_pending=int(self.locked("REGION")),
            desc_pending=int(self.locked("DESC")), track_pending=int(self.locked("TRACK")),
            arb_pending=int(self.locked("ARB")))

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
        if group in _STICKY:
            return self.sticky[group]
        if group in STAGING:
            return self.staging[group]
        return getattr(ins, _STATS[group])

    def outputs(self):
        """The outputs during this cycle: ``r_data``, ``errors`` (packed) and, per staging
        group, the packed payload of its stream while ``valid``, else None."""
        return {"r_data": self.r_data, "errors": self.sticky["CSR_ERRORS"],
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
        ready = {**dict.fromkeys(_ALWAYS_READY, True), "DESC": bool(ins.dma_ready),
                 "TRACK": bool(ins.tracker_ready)}
        taken = {g: self.staging[g] for g in STAGING if self.valid[g] and ready[g]}
        errs = set()
        reg = None
        if ins.r_stb or ins.w_stb:
            reg = rm.by_addr.get(ins.addr)
            if reg is None:
                errs.add("unmapped")
        r_data = self.r_data
        if ins.r_stb:
            r_data = reg.extract(self.value(reg.group, ins)) if reg else 0
            if reg is not None and self.loading(reg.group):
                errs.add("busy")
        staging = dict(self.staging)
        for g, loads in self.loads.items():
            if loads[-1] is not None:
                codec = self.codec[g]
                staging[g] = codec.pack(**{**codec.unpack(staging[g]), **loads[-1]})
        valid = {g: self.valid[g] and g not in taken for g in STAGING}
        fetch = dict.fromkeys(self.tables)
        clear = dict.fromkeys(_STICKY, 0)
        if ins.w_stb and reg is not None:
            g = reg.group
            if reg.access == Access.RO:
                errs.add("read_only")
            elif reg.access == Access.W1C:
                clear[g] = reg.insert(0, ins.w_data)
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
        events = {"CSR_ERRORS": self.codec["CSR_ERRORS"].pack(**dict.fromkeys(errs, 1))}
        for g, port in _STICKY.items():
            if port is not None:
                events[g] = getattr(ins, port)
            self.sticky[g] = (self.sticky[g] & ~clear[g]) | events[g]
        self.r_data = r_data
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

    def status(self):
        """The packed ``status`` port: the policy and the programmed threshold; ``measuring``
        while T3-MCA derives its threshold (threshold 0), simplified to "always then"."""
        cfg = self.config
        return self.status_codec.pack(
            policy=cfg["policy"], threshold=cfg["threshold"],
            measuring=int(cfg["policy"] == ArbPolicy.T3_MCA.value and cfg["threshold"] == 0))


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
    cleared, as the RTL targets' are by their ``clear`` held high.
    """

    def __init__(self, params, *, tracker=None, dma=None, addrmap=None, arbiter=None):
        self.tracker = tracker if tracker is not None else TrackerModel(params)
        self.dma = dma if dma is not None else DmaModel(params)
        self.addrmap = addrmap if addrmap is not None else AddrMapModel(params)
        self.arbiter = arbiter if arbiter is not None else ArbiterConfig(params)
        self.map = RegisterMap(params)
        self.models = {"tracker": self.tracker, "dma": self.dma, "addrmap": self.addrmap,
                       "arbiter": self.arbiter}
        assert tuple(self.models) == _TARGETS
        self.events = dict.fromkeys(self.models, 0)
        self.log = []               # (group, fields) of every request transferred
        # A target that checks a request a cycle after taking it (the address map's region
        # writes: VERDICT_DELAY) applies it late: requests wait here, one slot per cycle.
        self.late = {g: deque([None] * (VERDICT_DELAY.get(g, 1) - 1))
                     for g in ("REGION", "DESC", "TRACK", "ARB")}

    def inputs(self):
        """Error events, counters, DMA idleness and the arbiter's status as
        :class:`CsrInputs` fields."""
        ins = {f"{name}_errors": bits for name, bits in self.events.items()}
        for name, model in self.models.items():
            ins[f"{name}_stats"] = model.stats_codec.pack(**model.stats)
        d = self.dma
        ins["dma_idle"] = int(not (d.queue or d.bursts_left or d.outstanding))
        ins["arbiter_status"] = self.arbiter.status()
        return ins

    def quiet(self):
        """No error event is on its way, and no request waits to be applied."""
        return not any(self.events.values()) and not any(
            x is not None for wait in self.late.values() for x in wait)

    def step(self, taken):
        """Apply the requests taken this cycle (``{staging group: packed payload}``)."""
        apply = {"REGION": self.addrmap.program, "DESC": self.dma.program,
                 "TRACK": self.tracker.program, "ARB": self.arbiter.program}
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


class ModelBus:
    """A bus for :class:`t3hw.sw.driver.Driver` over :class:`CsrModel` and :class:`Targets`.

    Each access is one clock of the model (a read returns the ``r_data`` it loaded). With
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
        return self.csr.r_data


class CsrEnv(StreamEnv):
    """Random register traffic and cycle-exact scoreboard for :class:`t3hw.hw.csr.Csr`.

    Parameters
    ----------
    params : EngineParams
    rng : random.Random
        Seeded source of randomness.
    ops : int
        Random bus cycles to run (0 for scripted use only).
    stall : float
        Probability per cycle that ``ready`` of ``dma_program`` and of ``tracker_program``
        (each) drops for a burst, in [0, 1).
    events : float
        Probability per cycle of a random error event on a target's ``errors`` input (besides
        the events of the target models), in [0, 1).
    external_bus : bool
        Something else (a :class:`t3hw.sw.driver.Driver` on a :class:`t3hw.sw.driver.CocotbBus`)
        drives the ``bus__*`` inputs; the environment samples them instead.

    The targets are :class:`Targets`; ``tracker_busy`` and ``dma_busy`` are high for the
    first ``tracker_entries`` and ``2**cmd_width`` cycles (the real blocks' reset sweeps) and,
    with random traffic, in occasional later bursts; the counters change at random, and so,
    now and then, does ``arbiter_status`` (otherwise it is the :class:`ArbiterConfig`'s).

    Scoring, every cycle: ``r_data``, ``errors``, ``valid`` and payload of the four program
    streams (held until taken: :class:`~sim_models.env.StreamEnv`), and the clears (all
    ones) against :class:`CsrModel`.
    """

    out_streams = ("dma_program", "tracker_program")
    in_flags    = ("bus__addr", "bus__w_data", "bus__w_stb", "bus__r_stb",
                   *(f"{t}_errors" for t in _TARGETS), *(f"{t}_stats" for t in _TARGETS),
                   "arbiter_status", "tracker_busy", "dma_busy", "dma_idle")
    out_flags   = ("bus__r_data", "errors",
                   *(f"{STAGING[g]}__{m}" for g in _ALWAYS_READY for m in ("valid", "payload")),
                   *(f"{t}_clear" for t in _TARGETS))

    def __init__(self, params, rng, *, ops=0, stall=0.1, events=0.01, external_bus=False):
        super().__init__()
        for name, value in (("stall", stall), ("events", events)):
            if not 0 <= value < 1:
                raise ValueError(f"{name} must be in [0, 1), not {value!r}")
        if not isinstance(ops, int) or ops < 0:
            raise ValueError(f"ops must be a non-negative integer, not {ops!r}")
        self.p, self.rng = params, rng
        self.model = CsrModel(params)
        self.map = self.model.map
        self.targets = Targets(params)
        self.ops, self.event_rate = ops, events
        self.external_bus = external_bus
        if external_bus:
            bus = tuple(n for n in CsrEnv.in_flags if n.startswith("bus__"))
            self.in_flags = tuple(n for n in CsrEnv.in_flags if n not in bus)
            self.out_flags = CsrEnv.out_flags + bus
        self.dma_stall = Stall(rng, stall, 8)
        self.tracker_stall = Stall(rng, stall, 8)
        self.busy = {"tracker": params.tracker_entries, "dma": params.dma_descriptors}
        self.force_busy = {"tracker": False, "dma": False}      # directed tests
        self.pulse = dict.fromkeys(self.targets.models, 0)      # directed: one event
        self.stats = dict.fromkeys(_STATS.values(), 0)          # counter inputs
        self.arb_status = None      # arbiter_status input, or None: the ArbiterConfig's
        self.dma_idle = 1
        self.scripted = deque()     # (addr, w_data or None, read?) or None (idle), in order
        self.results = []           # data of every scripted read, in order
        self._reading = False       # a scripted read was issued last cycle
        self._access = None         # (addr, w_data or None, read?, scripted?) this cycle
        self.seen = {"commands": {}, "errors": set(), "reads": set(), "writes": set(),
                     "reads_while_loading": 0}
        widths = {name: g.codec.width for name, g in self.map.groups.items()}
        self._clear_all = {port: (1 << widths[g]) - 1 for g, port in _STICKY.items() if port}

    # -- stimulus --------------------------------------------------------------------------
    def _addr(self, name_or_addr):
        return self.map.by_name[name_or_addr].addr if isinstance(name_or_addr, str) \
            else name_or_addr

    def write(self, reg, value):
        """Scripted: write ``value`` to register ``reg`` (a name or a byte address)."""
        self.scripted.append((self._addr(reg), value, False))

    def read(self, reg):
        """Scripted: read register ``reg``; the data is appended to :attr:`results`."""
        self.scripted.append((self._addr(reg), None, True))

    def command(self, command):
        """Scripted: write ``command`` (a :class:`~t3hw.spec.layouts.CsrCommand`) to COMMAND."""
        self.write("COMMAND", self.map.encode("COMMAND", command=command)[0][1])

    def stage(self, group, **fields):
        """Scripted: write every register of a staging group."""
        for reg, word in self.map.encode(group, **fields):
            self.write(reg.addr, word)

    def idle(self, cycles):
        """Scripted: ``cycles`` cycles with no access."""
        self.scripted.extend([None] * cycles)

    def commit(self, command):
        """Scripted: a command, then the idle cycles it keeps its group pending for: a write
        command when its target is ready, the cycle its target takes it, then the wait for the
        target's verdict (:data:`~t3hw.spec.contract.CSR_VERDICT_DELAY`); a read command, the load
        (:data:`~t3hw.spec.contract.CSR_LOAD_CYCLES`)."""
        self.command(command)
        group, is_read = COMMANDS[CsrCommand(command)]
        self.idle(LOAD_CYCLES if is_read else 1 + VERDICT_DELAY.get(group, 1))

    def _random_access(self):
        rng, rm = self.rng, self.map
        # Software reads a group back right after its read command: while a group loads, half
        # the accesses read one of its registers (the RTL must answer ``busy``). The model has
        # stepped through the last cycle, so it knows which loads are under way in this one.
        loading = [g for g in self.model.tables if self.model.loading(g)]
        if loading and rng.random() < 0.5:
            return rng.choice(rm.groups[rng.choice(loading)].registers).addr, None, True
        r = rng.random()
        if r < 0.03:
            addr = rng.randrange(1 << rm.addr_width)           # mostly unmapped
        elif r < 0.18:
            addr = rm.by_name["COMMAND"].addr
        else:
            addr = rng.choice(rm.registers).addr
        reg = rm.by_addr.get(addr)
        kind = rng.random()
        read, write = kind < 0.55, kind > 0.45
        word = rng.getrandbits(32)
        if reg is not None and reg.access == Access.WO and rng.random() < 0.75:
            word = rng.choice(list(COMMANDS)).value
        elif reg is not None and reg.access == Access.W1C and rng.random() < 0.5:
            word = 0
        elif reg is not None and reg.access == Access.RW and rng.random() < 0.5:
            # Field by field: zero, one, all ones or random (the edges a configuration is
            # checked against: a zero limit, the largest window, ...).
            word = 0
            for f in reg.fields:
                word |= rng.choice((0, f.mask & -f.mask, f.mask, rng.getrandbits(32))) \
                    & f.mask
        return addr, word if write else None, read

    def inputs(self):
        rng = self.rng
        scripted = bool(self.scripted)
        access = None
        if scripted:
            access = self.scripted.popleft()
        elif self.ops > 0:
            self.ops -= 1
            access = self._random_access() if rng.random() < 0.85 else None
        addr, w_data, read = access if access is not None else (0, None, False)
        self._access = (addr, w_data, read, scripted)
        ins = self.targets.inputs()
        for name, model in self.targets.models.items():
            ins[f"{name}_errors"] |= self.pulse[name]
            self.pulse[name] = 0
            if self.ops and rng.random() < self.event_rate:
                ins[f"{name}_errors"] |= rng.getrandbits(model.errors_codec.width)
        if self.ops and rng.random() < 0.02:
            self.stats = {f"{name}_stats": rng.getrandbits(model.stats_codec.width)
                          for name, model in self.targets.models.items()}
            self.dma_idle = rng.getrandbits(1)
            self.arb_status = rng.choice(
                (None, rng.getrandbits(self.targets.arbiter.status_codec.width)))
        if self.arb_status is not None:
            ins["arbiter_status"] = self.arb_status
        busy = {}
        for name in self.busy:
            if self.busy[name]:
                self.busy[name] -= 1
            elif self.ops and rng.random() < 0.002:
                self.busy[name] = rng.randint(1, 20)
            busy[name] = int(self.busy[name] > 0 or self.force_busy[name])
        return {
            **ins, **self.stats, "dma_idle": self.dma_idle,
            "bus__addr": addr, "bus__w_data": w_data or 0, "bus__w_stb": int(w_data is not None),
            "bus__r_stb": int(read),
            "dma_program": self.dma_stall.ready(), "tracker_program": self.tracker_stall.ready(),
            "tracker_busy": busy["tracker"], "dma_busy": busy["dma"],
        }

    # -- scoring ---------------------------------------------------------------------------
    def check(self, outs):
        cyc, exp = self.cycle, self.model.outputs()
        assert outs["bus__r_data"] == exp["r_data"], \
            f"cycle {cyc}: r_data {outs['bus__r_data']:#x}, model {exp['r_data']:#x}"
        assert outs["errors"] == exp["errors"], \
            f"cycle {cyc}: errors {outs['errors']:#x}, model {exp['errors']:#x}"
        for g, port in STAGING.items():
            if g in _ALWAYS_READY:
                got = outs[f"{port}__payload"] if outs[f"{port}__valid"] else None
            else:
                got = outs[port]
            assert got == exp[g], f"cycle {cyc}: {port} {got!r}, model {exp[g]!r}"
        for port, ones in self._clear_all.items():
            name = port.replace("errors", "clear")
            assert outs[name] == ones, f"cycle {cyc}: {name} {outs[name]:#x}"
        if self._reading:
            self.results.append(outs["bus__r_data"])
        ins, (addr, w_data, read, scripted) = self._ins, self._access
        if self.external_bus:
            addr, read = outs["bus__addr"], bool(outs["bus__r_stb"])
            w_data = outs["bus__w_data"] if outs["bus__w_stb"] else None
        self._reading = read and scripted
        self._note(addr, w_data, read)
        bus = dict(addr=addr, w_data=w_data or 0, w_stb=int(w_data is not None), r_stb=int(read))
        taken = self.model.step(CsrInputs(
            **bus, dma_ready=int(ins["dma_program"]), tracker_ready=int(ins["tracker_program"]),
            **{f.name: ins[f.name] for f in dc_fields(CsrInputs)
               if f.name in ins and f.name not in bus}))
        self.targets.step(taken)

    def _note(self, addr, w_data, read):
        reg = self.map.by_addr.get(addr)
        if reg is None:
            return
        if read:
            self.seen["reads"].add(reg.name)
            self.seen["reads_while_loading"] += self.model.loading(reg.group)
        if w_data is not None:
            self.seen["writes"].add(reg.name)
            if reg.access == Access.WO:
                code = w_data & reg.mask
                self.seen["commands"][code] = self.seen["commands"].get(code, 0) + 1
        for name, v in self.model.codec["CSR_ERRORS"].unpack(self.model.sticky["CSR_ERRORS"]) \
                .items():
            if v:
                self.seen["errors"].add(name)

    def done(self):
        """Random and scripted accesses all issued, nothing pending or on its way."""
        return (not self.ops and not self.scripted and not self.model.pending()
                and self.targets.quiet() and not self._reading)


# --- scenarios, shared by the amaranth.sim tests and the cocotb testbench ---------------------
# The directed scenarios expect an environment without random stalls (``stall=0``).

async def drain(env, cycle, *, limit=1_000_000):
    """Run until :meth:`CsrEnv.done` (every cycle scored)."""
    for _ in range(limit):
        await cycle()
        if env.done():
            return
    raise AssertionError(f"not done after {limit} cycles (cycle {env.cycle})")


async def run_script(env, cycle, *, settle=True):
    """Run the scripted accesses; return the data of their reads (and forget them).

    With ``settle``, also wait until no command is pending; without, stop after the last
    scripted access (a command may stay pending behind a stalled target).
    """
    if settle:
        await drain(env, cycle)
    else:
        while env.scripted or env._reading:
            await cycle()
    results, env.results = env.results, []
    return results


def _bit(rm, reg, field):
    return next(f.mask for f in rm.by_name[reg].fields if f.name == field)


async def _reset(env, cycle):
    """Run the reset sweeps (the targets' and the read-back tables')."""
    while env.model.sweeping or any(env.busy.values()):
        await cycle()


def _arb_status(rm, cfg):
    """The ``ARB_STATUS`` words of an arbiter in configuration ``cfg`` (:class:`ArbiterConfig`
    written out)."""
    measuring = cfg["policy"] == ArbPolicy.T3_MCA.value and cfg["threshold"] == 0
    return [w for _, w in rm.encode("ARB_STATUS", policy=cfg["policy"],
                                    threshold=cfg["threshold"], measuring=int(measuring))]


async def every_register(env, cycle):
    """Every register after reset, with the expected values written out here (``ARB_*``: the
    arbiter's configuration after reset, from the parameters); every RW register written with
    ones and zeros and read back; every target error bit set by an event and cleared one at a
    time (W1C); every counter and ``ARB_STATUS`` read field by field."""
    p, rm = env.p, env.map
    await _reset(env, cycle)
    for reg in rm.registers:
        env.read(reg.name)
    got = dict(zip((r.name for r in rm.registers), await run_script(env, cycle)))
    config = rm.constant("CONFIG")
    expect = dict.fromkeys(got, 0)
    expect["ID"] = MAGIC
    expect["STATUS"] = _bit(rm, "STATUS", "dma_idle")
    expect["CONFIG"] = sum(config[f.name] << f.offset for f in rm.by_name["CONFIG"].fields)
    arb = dict(policy=p.arbiter_policy, threshold=p.mca_threshold, saturation=p.mca_saturation,
               window_log2=p.mca_window_log2, starvation_limit=p.starvation_limit)
    expect.update((r.name, w) for r, w in rm.encode("ARB", **arb))
    expect.update(zip((r.name for r in rm.groups["ARB_STATUS"].registers), _arb_status(rm, arb)))
    assert got == expect, {k: (hex(got[k]), hex(v)) for k, v in expect.items() if got[k] != v}
    assert (config["index_width"], config["region_index_width"], config["cmd_width"],
            config["addr_width"]) == (p.index_width, p.region_index_width, p.cmd_width,
                                      p.addr_width)
    # RW: ones, then zeros; only the fields' bits stick.
    rw = [r for r in rm.registers if r.access == Access.RW]
    for pattern in (0xffffffff, 0):
        for reg in rw:
            env.write(reg.name, pattern)
        for reg in rw:
            env.read(reg.name)
        assert await run_script(env, cycle) == [pattern & r.mask for r in rw]
    # W1C: every bit set by an event, then cleared one at a time.
    for target in env.targets.models:
        reg = rm.by_name[f"{target.upper()}_ERRORS"]
        env.pulse[target] = reg.mask
        env.idle(1)
        env.read(reg.name)
        assert await run_script(env, cycle) == [reg.mask], reg.name
        left = reg.mask
        for f in reg.fields:
            env.write(reg.name, f.mask)
            env.read(reg.name)
            left &= ~f.mask
            assert await run_script(env, cycle) == [left], (reg.name, f.name)
    # Counters: the inputs, register by register.
    for group, port in _STATS.items():
        value = env.rng.getrandbits(rm.groups[group].codec.width)
        env.stats[port] = value
        env.idle(1)
        for reg, _ in rm.split(group, value):
            env.read(reg.name)
        assert await run_script(env, cycle) == [w for _, w in rm.split(group, value)], group
    # ARB_STATUS: the input.
    value = env.rng.getrandbits(rm.groups["ARB_STATUS"].codec.width)
    env.arb_status = value
    env.idle(1)
    for reg, _ in rm.split("ARB_STATUS", value):
        env.read(reg.name)
    assert await run_script(env, cycle) == [w for _, w in rm.split("ARB_STATUS", value)]
    env.arb_status = None


async def _expect_error(env, cycle, name, *, settle=True):
    """Read CSR_ERRORS: exactly ``name`` set; clear it; read 0."""
    bit = _bit(env.map, "CSR_ERRORS", name)
    env.read("CSR_ERRORS")
    env.write("CSR_ERRORS", bit)
    env.read("CSR_ERRORS")
    assert await run_script(env, cycle, settle=settle) == [bit, 0], f"{name}: CSR_ERRORS"


async def provoke_errors(env, cycle):
    """Every error bit of the block provoked alone, read back and cleared (W1C), ``busy``
    also by a read and by a write of a group while a read command loads it; the targets'
    rejections reported in their error registers and kept out of the read-back tables; the
    arbiter's rejections of bad configurations (``ARBITER_ERRORS.bad_config``), which leave
    its configuration in effect."""
    rm = env.map
    # Right out of reset the read-back tables are being cleared (for at least 2 cycles):
    # commands are refused, but not ARB_WRITE, which sends the reset configuration.
    env.command(CsrCommand.REGION_READ)
    env.command(CsrCommand.ARB_WRITE)
    await _expect_error(env, cycle, "busy")
    assert env.targets.log == [("ARB", rm.reset("ARB"))], env.targets.log
    await _reset(env, cycle)
    unmapped = next(a for a in range(0, 1 << rm.addr_width, 4) if a not in rm.by_addr)
    for access in ((unmapped, None, True), (unmapped, 5, False), (1, None, True),
                   (rm.by_name["STATUS"].addr + 2, 0, False)):
        env.scripted.append(access)
        assert await run_script(env, cycle) == ([0] if access[2] else [])     # reads 0
        await _expect_error(env, cycle, "unmapped")
    for reg in (r for r in rm.registers if r.access == Access.RO):
        env.write(reg.name, 0xffffffff)
        await _expect_error(env, cycle, "read_only")
    known = {c.value for c in CsrCommand}
    for code in range(1 << rm.by_name["COMMAND"].fields[0].width):
        if code not in known:
            env.write("COMMAND", code)
            await _expect_error(env, cycle, "bad_command")
    # Busy targets; the arbiter is never busy.
    for target, command in (("dma", CsrCommand.DESC_WRITE), ("tracker", CsrCommand.TRACK_WRITE)):
        env.force_busy[target] = True
        env.command(command)
        await _expect_error(env, cycle, "busy")
        env.force_busy[target] = False
    env.force_busy = dict.fromkeys(env.force_busy, True)
    env.commit(CsrCommand.ARB_WRITE)
    env.read("CSR_ERRORS")
    assert await run_script(env, cycle) == [0]
    env.force_busy = dict.fromkeys(env.force_busy, False)
    # ARB is locked in the cycle its request is on arbiter_program: a second ARB_WRITE or a
    # write of an ARB register then is refused (the register keeps its value).
    arb = rm.encode("ARB", **rm.reset("ARB"))
    env.command(CsrCommand.ARB_WRITE)
    env.read("STATUS")
    env.read("STATUS")
    assert await run_script(env, cycle) == \
        [_bit(rm, "STATUS", "arb_pending") | _bit(rm, "STATUS", "dma_idle"),
         _bit(rm, "STATUS", "dma_idle")]
    seconds = [lambda: env.command(CsrCommand.ARB_WRITE)]
    seconds += [lambda reg=reg, word=word: env.write(reg.name, ~word & 0xffffffff)
                for reg, word in arb]
    for second in seconds:
        env.command(CsrCommand.ARB_WRITE)
        second()
        await _expect_error(env, cycle, "busy")
    for reg, _ in arb:
        env.read(reg.name)
    assert await run_script(env, cycle) == [w for _, w in arb]
    # Bad arbiter configurations: rejected, the configuration in effect stays.
    good = dict(policy=ArbPolicy.COMPUTE_FIRST.value, threshold=1, saturation=1,
                window_log2=MAX_WINDOW_LOG2, starvation_limit=1)
    env.stage("ARB", **good)
    env.commit(CsrCommand.ARB_WRITE)
    env.read("ARBITER_ERRORS")
    env.read("ARB_STATUS")
    assert await run_script(env, cycle) == [0] + _arb_status(rm, good)
    bad_config, in_effect = _bit(rm, "ARBITER_ERRORS", "bad_config"), _arb_status(rm, good)
    for bad in (dict(good, policy=3), dict(good, starvation_limit=0),
                dict(good, window_log2=MAX_WINDOW_LOG2 + 1),
                dict(good, threshold=0, saturation=0)):
        assert not config_ok(bad), bad
        env.stage("ARB", **bad)
        env.commit(CsrCommand.ARB_WRITE)
        env.read("ARBITER_ERRORS")
        env.read("ARB_STATUS")
        env.write("ARBITER_ERRORS", bad_config)
        env.read("ARBITER_ERRORS")
        for reg in rm.groups["ARB"].registers:
            env.read(reg.name)
        got = await run_script(env, cycle)
        n = len(in_effect) + 2
        assert got[:n] == [bad_config, *in_effect, 0], (bad, got)
        assert got[n:] == [w for _, w in rm.encode("ARB", **bad)], (bad, got)   # as staged
        assert env.targets.arbiter.config == good
    # A pending command locks its group: a second command, a staging write, a read command.
    desc = dict(index=1, valid=1, op=1, device=1, tile=1, rows=1, row_bytes=1, pitch=1, src=1,
                dst=1)
    env.stage("DESC", **desc)
    env.dma_stall.hold = True
    env.command(CsrCommand.DESC_WRITE)
    env.read("STATUS")
    assert await run_script(env, cycle, settle=False) == \
        [_bit(rm, "STATUS", "desc_pending") | _bit(rm, "STATUS", "dma_idle")]
    for access in (lambda: env.command(CsrCommand.DESC_WRITE),
                   lambda: env.write(rm.groups["DESC"].registers[0].name, 0),
                   lambda: env.command(CsrCommand.DESC_READ)):
        access()
        await _expect_error(env, cycle, "busy", settle=False)
    env.dma_stall.hold = False
    await drain(env, cycle)
    # A read command loads its group over LOAD_CYCLES cycles, in which the group is pending:
    # a read of its registers returns them as they were and sets busy, a write is refused
    # (busy); in the next cycle the group reads the loaded entry.
    regs, idle = rm.groups["DESC"].registers, _bit(rm, "STATUS", "dma_idle")
    env.stage("DESC", index=desc["index"])                      # every other field 0
    env.command(CsrCommand.DESC_READ)
    for _ in range(LOAD_CYCLES):
        env.read(regs[0].name)
    env.read("STATUS")
    assert await run_script(env, cycle) == \
        [rm.encode("DESC", index=desc["index"])[0][1]] * LOAD_CYCLES + [idle]
    await _expect_error(env, cycle, "busy")
    env.command(CsrCommand.DESC_READ)
    env.read("STATUS")
    env.idle(LOAD_CYCLES - 2)
    env.write(regs[-1].name, 0xffffffff)
    for r in regs:
        env.read(r.name)
    got = await run_script(env, cycle)
    assert got[0] == _bit(rm, "STATUS", "desc_pending") | idle, got
    assert rm.decode("DESC", dict(zip((r.name for r in regs), got[1:]))) == desc
    await _expect_error(env, cycle, "busy")
    # Rejected writes: reported by the target, not copied into the read-back table.
    rejected = (("DESC", dict(desc, index=0, rows=0), "DMA_ERRORS", "bad_program"),
                ("REGION", dict(index=1, valid=1, mode=1, base=4, size=0), "ADDRMAP_ERRORS",
                 "bad_region"),
                ("REGION", dict(index=1, valid=1, mode=3, base=4, size=4), "ADDRMAP_ERRORS",
                 "bad_region"))
    for group, bad, reg, field in rejected:
        env.stage(group, **bad)
        env.commit(CsrCommand[f"{group}_WRITE"])
        env.read(reg)
        env.write(reg, 0xffffffff)
        env.commit(CsrCommand[f"{group}_READ"])
        for r in rm.groups[group].registers:
            env.read(r.name)
        got = await run_script(env, cycle)
        assert got[0] == _bit(rm, reg, field), f"{reg}: {got[0]:#x}"
        back = rm.decode(group, dict(zip((r.name for r in rm.groups[group].registers), got[1:])))
        assert back == {**dict.fromkeys(back, 0), "index": bad["index"]}, back
    good = dict(index=0, valid=1, mode=2, device=1, base=4, size=4, remote_base=0)
    for fields in (good, dict(good, index=1, base=7)):
        env.stage("REGION", **fields)
        env.commit(CsrCommand.REGION_WRITE)
    env.read("ADDRMAP_ERRORS")
    assert await run_script(env, cycle) == [_bit(rm, "ADDRMAP_ERRORS", "overlap")]
    for threshold in (0, 1, 1):
        env.stage("TRACK", op=0, tile=1, threshold=threshold)
        env.commit(CsrCommand.TRACK_WRITE)
    env.read("TRACKER_ERRORS")
    assert await run_script(env, cycle) == \
        [_bit(rm, "TRACKER_ERRORS", "bad_threshold") | _bit(rm, "TRACKER_ERRORS", "reprogram")]


async def readback(env, cycle):
    """Regions and descriptors written, then each read back by staging its index and a read
    command, the group read as soon as the load is done (:data:`~t3hw.spec.contract.CSR_LOAD_CYCLES`, no
    cycle more). Arbiter configurations (no read-back
    table) written, each read back from the ``ARB_*`` registers and, as the arbiter uses it,
    from ``ARB_STATUS``."""
    p, rm, rng = env.p, env.map, env.rng
    await _reset(env, cycle)
    written = {"REGION": {}, "DESC": {}}
    top, n = 1 << p.addr_width, min(p.regions, 4)
    for i in range(n):
        written["REGION"][i] = dict(
            index=i, valid=1, mode=i % 3, device=rng.getrandbits(p.device_width),
            base=i * (top // n), size=top // n, remote_base=rng.getrandbits(p.addr_width))
    for i in rng.sample(range(p.dma_descriptors), min(6, p.dma_descriptors)):
        written["DESC"][i] = dict(
            index=i, valid=1, op=rng.getrandbits(1), device=rng.getrandbits(p.device_width),
            tile=rng.getrandbits(p.tile_width), rows=rng.randint(1, (1 << p.rows_width) - 1),
            row_bytes=rng.randint(1, (1 << p.row_bytes_width) - 1),
            pitch=rng.getrandbits(p.pitch_width), src=rng.getrandbits(p.addr_width),
            dst=rng.getrandbits(p.addr_width))
    for group, entries in written.items():
        for fields in entries.values():
            env.stage(group, **fields)
            env.commit(CsrCommand[f"{group}_WRITE"])
    await run_script(env, cycle)
    for group, entries in written.items():
        regs = rm.groups[group].registers
        for index in entries:
            env.stage(group, index=index)               # every other field 0
            env.commit(CsrCommand[f"{group}_READ"])
            for r in regs:
                env.read(r.name)
        got = await run_script(env, cycle)
        for k, fields in enumerate(entries.values()):
            words = dict(zip((r.name for r in regs), got[k * len(regs):(k + 1) * len(regs)]))
            assert rm.decode(group, words) == fields, (group, rm.decode(group, words), fields)
    arb, status = rm.groups["ARB"].registers, rm.groups["ARB_STATUS"].registers
    for policy in ArbPolicy:
        top = (1 << p.occupancy_width) - 1
        cfg = dict(policy=policy.value, threshold=rng.choice((0, rng.randint(1, top))),
                   saturation=rng.randint(1, top),
                   window_log2=rng.randint(0, MAX_WINDOW_LOG2),
                   starvation_limit=rng.randint(1, (1 << p.starvation_width) - 1))
        env.stage("ARB", **cfg)
        env.commit(CsrCommand.ARB_WRITE)
        for r in arb + status:
            env.read(r.name)
        got = await run_script(env, cycle)
        words = dict(zip((r.name for r in arb), got))
        assert rm.decode("ARB", words) == cfg, (rm.decode("ARB", words), cfg)
        assert got[len(arb):] == _arb_status(rm, cfg), (got, cfg)
        assert env.targets.arbiter.config == cfg
