# SPDX-License-Identifier: Apache-2.0
"""The environment of the register block (:mod:`t3hw.hw.csr`), scored against its reference
model (:mod:`sim_models.csr`), and the scenarios.

* :class:`CsrEnv`: seeded random register traffic (and scripted accesses) for the RTL, with a
  scoreboard that compares ``r_data``, the sticky errors, ``irq``, ``device_id``, the clears
  and every field of the four program streams with :class:`~sim_models.csr.CsrModel` every
  cycle; the targets are :class:`~sim_models.csr.Targets`.
* Scenarios shared by the amaranth.sim tests and the cocotb testbench: :func:`drain`,
  :func:`run_script`, :func:`every_register`, :func:`provoke_errors`; the read-backs,
  first-error captures, interrupt, tracker answers, atomic 64-bit counters and refused
  writes are in :mod:`t3hw.verif.csr_scenarios`.

Register names, addresses and fields come from :class:`t3hw.spec.regmap.RegisterMap`.
"""

from collections import deque
from dataclasses import fields as dc_fields

from t3hw.spec.contract import (CSR_LOAD_CYCLES as LOAD_CYCLES, CSR_READ_LATENCY,
                                addrmap_program_cycles, csr_verdict_delay)
from t3hw.spec.layouts import ArbPolicy, CsrCommand
from t3hw.spec.regmap import MAGIC, Access

from sim_models.arbiter import MAX_WINDOW_LOG2, config_ok
from sim_models.csr import (ALWAYS_READY, CAPTURE, STATS, STICKY, TARGETS, COMMANDS, STAGING,
                            ArbiterConfig, CsrInputs, CsrModel, Targets)

from .env import Stall, StreamEnv


__all__ = ["CsrEnv", "drain", "run_script", "field_mask", "wait_reset", "arb_status_words",
           "every_register", "provoke_errors"]


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
        Probability per cycle that ``ready`` of ``region_program``, ``dma_program`` and
        ``tracker_program`` (each) drops for a burst, in [0, 1).
    events : float
        Probability per cycle of a random error event on a target's ``errors`` input (besides
        the events of the target models), in [0, 1).
    answer : int
        Most cycles from the tracker taking a request to its answer on ``tracker_result``
        (each answer's delay is drawn from 1 .. ``answer`` with random traffic, is ``answer``
        otherwise).
    external_bus : bool
        Something else (a :class:`t3hw.sw.driver.Driver` on a :class:`t3hw.sw.driver.CocotbBus`)
        drives the ``bus__*`` inputs; the environment samples them instead.

    The targets are :class:`Targets`; ``tracker_busy`` and ``dma_busy`` are high for the
    first ``tracker_entries`` and ``2**cmd_width`` cycles (the real blocks' reset sweeps) and,
    with random traffic, in occasional later bursts; the counters change at random, and so,
    now and then, does ``arbiter_status`` (otherwise it is the :class:`ArbiterConfig`'s); the
    targets' ``capture`` inputs are random every cycle with random traffic (else
    :attr:`capture`).

    Scoring, every cycle: ``r_data``, ``errors``, ``irq``, ``device_id``, ``valid`` and payload
    of the four program streams (held until taken: :class:`~t3hw.verif.env.StreamEnv`), and
    the clears (all ones) against :class:`CsrModel`.
    """

    in_streams   = ("tracker_result",)
    always_ready = ("tracker_result",)
    out_streams  = ("region_program", "dma_program", "tracker_program")
    in_flags    = ("bus__addr", "bus__w_data", "bus__w_stb", "bus__r_stb",
                   *(f"{t}_errors" for t in TARGETS), *(f"{t}_stats" for t in TARGETS),
                   *(port for port, _ in CAPTURE.values()),
                   "arbiter_status", "tracker_busy", "dma_busy", "dma_idle")
    out_flags   = ("bus__r_data", "errors", "irq", "device_id",
                   *(f"{STAGING[g]}__{m}" for g in ALWAYS_READY for m in ("valid", "payload")),
                   *(f"{t}_clear" for t in TARGETS))

    def __init__(self, params, rng, *, ops=0, stall=0.1, events=0.01, answer=1,
                 external_bus=False):
        super().__init__()
        for name, value in (("stall", stall), ("events", events)):
            if not 0 <= value < 1:
                raise ValueError(f"{name} must be in [0, 1), not {value!r}")
        if not isinstance(ops, int) or ops < 0:
            raise ValueError(f"ops must be a non-negative integer, not {ops!r}")
        if not isinstance(answer, int) or answer < 1:
            raise ValueError(f"answer must be a positive integer, not {answer!r}")
        self.answer = answer
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
        self.region_stall = Stall(rng, stall, 8)
        self.dma_stall = Stall(rng, stall, 8)
        self.tracker_stall = Stall(rng, stall, 8)
        self.busy = {"tracker": params.tracker_entries, "dma": params.dma_descriptors}
        self.force_busy = {"tracker": False, "dma": False}      # directed tests
        self.pulse = dict.fromkeys(self.targets.models, 0)      # directed: one event
        self.stats = dict.fromkeys(STATS.values(), 0)          # counter inputs
        self.arb_status = None      # arbiter_status input, or None: the ArbiterConfig's
        self.dma_idle = 1
        self.capture = {port: 0 for port, _ in CAPTURE.values()}   # capture inputs
        self.scripted = deque()     # (addr, w_data or None, read?), None (idle) or
                                    # ("do", function, access): call it, then the access
        self.results = []           # data of every scripted read, in order
        # Per cycle of the read latency, oldest first: a scripted read was issued then.
        self._reads = deque([False] * CSR_READ_LATENCY)
        self._access = None         # (addr, w_data or None, read?, scripted?) this cycle
        self.seen = {"commands": {}, "errors": set(), "reads": set(), "writes": set(),
                     "reads_while_loading": 0}
        widths = {name: g.codec.width for name, g in self.map.groups.items()}
        self._clear_all = {port: (1 << widths[g]) - 1 for g, port in STICKY.items() if port}

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

    def at(self, function, access=None):
        """Scripted: call ``function()`` at the start of the cycle (to change an input), with
        ``access`` (``(reg, w_data or None, read?)``) or none in that cycle."""
        if access is not None:
            access = (self._addr(access[0]), *access[1:])
        self.scripted.append(("do", function, access))

    def event(self, target, *, access=None, **bits):
        """Scripted: a cycle in which the target's ``errors`` input shows the named bits (an
        error event), with ``access`` or none (:meth:`at`)."""
        value = self.targets.models[target].errors_codec.pack(**bits)
        self.at(lambda: self.pulse.__setitem__(target, self.pulse[target] | value), access)

    def commit(self, command):
        """Scripted: a command, then the idle cycles it keeps its group pending for: a write
        command when its target is ready, the cycle its target takes it, then the wait for the
        target's verdict (:func:`~t3hw.spec.contract.csr_verdict_delay`; for a region write, at
        least until the address map is ready again); a read command, the load
        (:data:`~t3hw.spec.contract.CSR_LOAD_CYCLES`)."""
        self.command(command)
        group, is_read = COMMANDS[CsrCommand(command)]
        wait = self.answer if group == "TRACK" else csr_verdict_delay(self.p).get(group, 1)
        if group == "REGION" and not is_read:
            # ... and until the address map is ready for the next region write
            wait = max(wait, addrmap_program_cycles(self.p) - 1)
        # (a write: the take, the wait, and the cycle in which the block registers the
        # target's error events before its sticky bits show them)
        self.idle(LOAD_CYCLES if is_read else 2 + wait)

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
            if access is not None and access[0] == "do":
                access[1]()
                access = access[2]
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
        if self.ops:
            self.capture = {port: rng.getrandbits(self.model.codec[g].layout["events"].offset)
                            for g, (port, _) in CAPTURE.items()}
        ins.update(self.capture)
        busy = {}
        for name in self.busy:
            if self.busy[name]:
                self.busy[name] -= 1
            elif self.ops and rng.random() < 0.002:
                self.busy[name] = rng.randint(1, 20)
            busy[name] = int(self.busy[name] > 0 or self.force_busy[name])
        # The address map's and the DMA's own gaps after a write, and random back-pressure.
        region_ready = bool(ins.pop("region_ready")) and self.region_stall.ready()
        dma_ready = bool(ins.pop("dma_ready")) and self.dma_stall.ready()
        return {
            **ins, **self.stats, "dma_idle": self.dma_idle,
            "bus__addr": addr, "bus__w_data": w_data or 0, "bus__w_stb": int(w_data is not None),
            "bus__r_stb": int(read),
            "region_program": region_ready,
            "dma_program": dma_ready, "tracker_program": self.tracker_stall.ready(),
            "tracker_busy": busy["tracker"], "dma_busy": busy["dma"],
        }

    # -- scoring ---------------------------------------------------------------------------
    def check(self, outs):
        cyc, exp = self.cycle, self.model.outputs()
        assert outs["bus__r_data"] == exp["r_data"], \
            f"cycle {cyc}: r_data {outs['bus__r_data']:#x}, model {exp['r_data']:#x}"
        for name in ("errors", "irq", "device_id"):
            assert outs[name] == exp[name], \
                f"cycle {cyc}: {name} {outs[name]:#x}, model {exp[name]:#x}"
        for g, port in STAGING.items():
            if g in ALWAYS_READY:
                got = outs[f"{port}__payload"] if outs[f"{port}__valid"] else None
            else:
                got = outs[port]
            assert got == exp[g], f"cycle {cyc}: {port} {got!r}, model {exp[g]!r}"
        for port, ones in self._clear_all.items():
            name = port.replace("errors", "clear")
            assert outs[name] == ones, f"cycle {cyc}: {name} {outs[name]:#x}"
        if self._reads.popleft():               # r_data is the read's, CSR_READ_LATENCY late
            self.results.append(outs["bus__r_data"])
        ins, (addr, w_data, read, scripted) = self._ins, self._access
        if self.external_bus:
            addr, read = outs["bus__addr"], bool(outs["bus__r_stb"])
            w_data = outs["bus__w_data"] if outs["bus__w_stb"] else None
        self._reads.append(read and scripted)
        self._note(addr, w_data, read)
        bus = dict(addr=addr, w_data=w_data or 0, w_stb=int(w_data is not None), r_stb=int(read))
        taken = self.model.step(CsrInputs(
            **bus, region_ready=int(ins["region_program"]), dma_ready=int(ins["dma_program"]),
            tracker_ready=int(ins["tracker_program"]),
            **{f.name: ins[f.name] for f in dc_fields(CsrInputs)
               if f.name in ins and f.name not in bus}))
        delay = self.rng.randint(1, self.answer) if self.ops else self.answer
        self.targets.step(taken, delay)

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

    @property
    def _reading(self):
        """A scripted read's data is still to come."""
        return any(self._reads)


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


def field_mask(rm, reg, field):
    """The mask of ``field`` in register ``reg``."""
    return next(f.mask for f in rm.by_name[reg].fields if f.name == field)


async def wait_reset(env, cycle):
    """Run the reset sweeps (the targets' and the read-back tables')."""
    while env.model.sweeping or any(env.busy.values()):
        await cycle()


def arb_status_words(rm, cfg):
    """The ``ARB_STATUS`` words of an arbiter in configuration ``cfg`` (:class:`ArbiterConfig`
    written out)."""
    return [w for _, w in rm.encode("ARB_STATUS", policy=cfg["policy"],
                                    threshold=cfg["threshold"],
                                    measuring=ArbiterConfig.measuring(cfg))]


async def every_register(env, cycle):
    """Every register after reset, with the expected values written out here (``ARB_*``: the
    arbiter's configuration after reset, from the parameters); every RW register written with
    ones and zeros and read back; every target error bit set by an event and cleared one at a
    time (W1C); every counter and ``ARB_STATUS`` read field by field."""
    p, rm = env.p, env.map
    await wait_reset(env, cycle)
    for reg in rm.registers:
        env.read(reg.name)
    got = dict(zip((r.name for r in rm.registers), await run_script(env, cycle)))
    config = rm.constant("CONFIG")
    expect = dict.fromkeys(got, 0)
    expect["ID"] = MAGIC
    expect["STATUS"] = field_mask(rm, "STATUS", "dma_idle")
    expect["CONFIG"] = sum(config[f.name] << f.offset for f in rm.by_name["CONFIG"].fields)
    arb = dict(policy=p.arbiter_policy, threshold=p.mca_threshold, saturation=p.mca_saturation,
               window_log2=p.mca_window_log2, starvation_limit=p.starvation_limit)
    expect.update((r.name, w) for r, w in rm.encode("ARB", **arb))
    expect.update(zip((r.name for r in rm.groups["ARB_STATUS"].registers), arb_status_words(rm, arb)))
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
    for group, port in STATS.items():
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
    bit = field_mask(env.map, "CSR_ERRORS", name)
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
    await wait_reset(env, cycle)
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
        [field_mask(rm, "STATUS", "arb_pending") | field_mask(rm, "STATUS", "dma_idle"),
         field_mask(rm, "STATUS", "dma_idle")]
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
    assert await run_script(env, cycle) == [0] + arb_status_words(rm, good)
    bad_config, in_effect = field_mask(rm, "ARBITER_ERRORS", "bad_config"), arb_status_words(rm, good)
    for bad in (dict(good, starvation_limit=0),
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
        [field_mask(rm, "STATUS", "desc_pending") | field_mask(rm, "STATUS", "dma_idle")]
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
    regs, idle = rm.groups["DESC"].registers, field_mask(rm, "STATUS", "dma_idle")
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
    assert got[0] == field_mask(rm, "STATUS", "desc_pending") | idle, got
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
        assert got[0] == field_mask(rm, reg, field), f"{reg}: {got[0]:#x}"
        back = rm.decode(group, dict(zip((r.name for r in rm.groups[group].registers), got[1:])))
        assert back == {**dict.fromkeys(back, 0), "index": bad["index"]}, back
    good = dict(index=0, valid=1, mode=2, device=1, base=4, size=4, remote_base=0)
    for fields in (good, dict(good, index=1, base=7)):
        env.stage("REGION", **fields)
        env.commit(CsrCommand.REGION_WRITE)
    env.read("ADDRMAP_ERRORS")
    assert await run_script(env, cycle) == [field_mask(rm, "ADDRMAP_ERRORS", "overlap")]
    for threshold in (0, 1, 1):
        env.stage("TRACK", op=0, tile=1, threshold=threshold)
        env.commit(CsrCommand.TRACK_WRITE)
    env.read("TRACKER_ERRORS")
    assert await run_script(env, cycle) == \
        [field_mask(rm, "TRACKER_ERRORS", "bad_threshold") | field_mask(rm, "TRACKER_ERRORS", "reprogram")]
