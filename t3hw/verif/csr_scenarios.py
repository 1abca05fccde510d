# SPDX-License-Identifier: Apache-2.0
"""Directed scenarios of the register block (:mod:`t3hw.hw.csr`) on a
:class:`~t3hw.verif.csr_env.CsrEnv`, shared by the amaranth.sim tests and the cocotb
testbench: :func:`readback`, :func:`first_errors`, :func:`interrupt`, :func:`tracker_answers`,
:func:`atomic_counters`, :func:`refused_writes`. Each writes out the values it expects; the
environment also scores every cycle against :class:`~sim_models.csr.CsrModel`. They expect an
environment without random stalls (``stall=0``).
"""

from t3hw.spec.contract import CSR_REFUSALS, csr_verdict_delay
from t3hw.spec.layouts import ArbPolicy, CsrCommand, TrackOp, TrackResult
from t3hw.spec.regmap import IRQ_ENABLES

from sim_models.arbiter import MAX_WINDOW_LOG2
from sim_models.dma import refusal
from sim_models.csr import CAPTURE, STATS

from .csr_env import arb_status_words, field_mask, run_script, wait_reset


__all__ = ["readback", "first_errors", "interrupt", "tracker_answers", "atomic_counters",
           "refused_writes"]


async def _read_group(env, cycle, group):
    """The fields of ``group``, read register by register."""
    regs = env.map.groups[group].registers
    for r in regs:
        env.read(r.name)
    got = await run_script(env, cycle)
    return env.map.decode(group, dict(zip((r.name for r in regs), got)))


async def readback(env, cycle):
    """Regions and descriptors written, then each read back by staging its index and a read
    command, the group read as soon as the load is done (:data:`~t3hw.spec.contract.CSR_LOAD_CYCLES`, no
    cycle more). Arbiter configurations (no read-back
    table) written, each read back from the ``ARB_*`` registers and, as the arbiter uses it,
    from ``ARB_STATUS``."""
    p, rm, rng = env.p, env.map, env.rng
    await wait_reset(env, cycle)
    written = {"REGION": {}, "DESC": {}}
    top, n = 1 << p.addr_width, min(p.regions, 4)
    for i in range(n):
        written["REGION"][i] = dict(
            index=i, valid=1, mode=i % 3, device=rng.getrandbits(p.device_width),
            base=i * (top // n), size=top // n, remote_base=rng.getrandbits(p.addr_width))
    for i in rng.sample(range(p.dma_descriptors), min(6, p.dma_descriptors)):
        # A descriptor the DMA accepts: rows apart by at least a row (pitch >= row_bytes)
        # and both ranges below 2**addr_width (sim_models.dma.refusal).
        rows = rng.randint(1, (1 << p.rows_width) - 1)
        row_bytes = rng.randint(1, (1 << min(p.row_bytes_width, p.pitch_width)) - 1)
        pitch = rng.randint(row_bytes, (1 << p.pitch_width) - 1)
        span = (rows - 1) * pitch + row_bytes
        if span > top:
            rows, span = 1, row_bytes
        written["DESC"][i] = dict(
            index=i, valid=1, op=rng.getrandbits(1), device=rng.getrandbits(p.device_width),
            tile=rng.getrandbits(p.tile_width), rows=rows, row_bytes=row_bytes, pitch=pitch,
            src=rng.randint(0, top - span), dst=rng.randint(0, top - span))
        assert refusal(p, written["DESC"][i]) is None, written["DESC"][i]
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
        assert got[len(arb):] == arb_status_words(rm, cfg), (got, cfg)
        assert env.targets.arbiter.config == cfg


async def first_errors(env, cycle):
    """Per target with a capture group: the first error event (all sticky bits clear) loads
    the target's ``capture`` input and the events; a later event, while a bit is set, does
    not; an event in the cycle software clears the last set bits loads it (a clear that
    races an error loses neither); an event while a bit stays set after a partial clear does
    not."""
    rm, rng = env.map, env.rng
    await wait_reset(env, cycle)
    for g, (port, errors) in CAPTURE.items():
        target = port[:-len("_capture")]
        at = rm.groups[g].layout["events"].offset
        names = env.targets.models[target].errors_codec.names
        mask = {n: field_mask(rm, errors, n) for n in names}
        ones = sum(mask.values())

        def expect(details, *bits):
            return {**rm.groups[g].codec.unpack(details), "events": sum(mask[b] for b in bits)}

        details = [rng.getrandbits(at) for _ in range(4)]
        env.capture[port] = details[0]
        env.event(target, **{names[0]: 1, names[-1]: 1})            # first: captured
        env.idle(1)
        assert await _read_group(env, cycle, g) == expect(details[0], names[0], names[-1])
        env.capture[port] = details[1]
        env.event(target, **{names[1]: 1})                          # sticky set: held
        env.idle(1)
        assert await _read_group(env, cycle, g) == expect(details[0], names[0], names[-1])
        env.capture[port] = details[2]                              # cleared as it comes
        # (the block registers both the bus and the events: the clear and the event meet
        # in the cycle after they come)
        env.event(target, access=(errors, ones, False), **{names[1]: 1})
        env.idle(1)
        assert await _read_group(env, cycle, g) == expect(details[2], names[1])
        env.write(errors, ones)
        env.event(target, **{names[0]: 1, names[1]: 1})             # first again
        env.event(target, access=(errors, mask[names[0]], False),   # names[1] stays set
                  **{names[0]: 1})
        env.idle(1)
        env.capture[port] = details[3]          # for the whole script: both events show it
        got = await _read_group(env, cycle, g)
        assert got == expect(details[3], names[0], names[1]), got
        env.write(errors, ones)
        env.read(errors)
        assert await run_script(env, cycle) == [0]


async def interrupt(env, cycle):
    """Per error group: an error bit raises ``irq`` (``STATUS.irq``, and the output, scored
    every cycle) only while its enable bit is set; clearing the bit or its enable lowers
    it."""
    rm = env.map
    await wait_reset(env, cycle)
    idle, irq = field_mask(rm, "STATUS", "dma_idle"), field_mask(rm, "STATUS", "irq")
    unmapped = next(a for a in range(0, 1 << rm.addr_width, 4) if a not in rm.by_addr)
    for errors, enable in IRQ_ENABLES.items():
        target = errors[:-len("_ERRORS")].lower()
        first = rm.groups[errors].registers[0].fields[0]
        if target == "csr":
            env.scripted.append((unmapped, None, True))             # sets CSR_ERRORS.unmapped
            assert first.name == "unmapped"
        else:
            env.event(target, **{first.name: 1})
        env.write(enable, ~first.mask & 0xffffffff)                 # every other bit
        env.idle(1)
        env.read("STATUS")
        env.write(enable, first.mask)
        env.idle(1)
        env.read("STATUS")
        env.write(errors, first.mask)
        env.idle(1)
        env.read("STATUS")
        got = await run_script(env, cycle)
        assert got[-3:] == [idle, idle | irq, idle], (errors, got)
        env.write(enable, 0)


def _track(env, op, tile, **fields):
    env.stage("TRACK", op=op, tile=tile, **fields)
    env.commit(CsrCommand.TRACK_WRITE)


async def tracker_answers(env, cycle):
    """``TRACK`` stays pending (``STATUS.track_pending``, registers locked) from the command
    until the tracker's answer, ``env.answer`` cycles after the tracker took it; the answer
    is ``TRACK_RESULT``: ARM, ARM again (BUSY), ARM with threshold 0 (BAD_THRESHOLD), READ,
    DISARM, DISARM again and READ (NOT_ARMED), an unknown op (BAD_OP)."""
    p, rm = env.p, env.map
    await wait_reset(env, cycle)
    tile, cmd = (1 << p.tile_width) - 1, (1 << p.cmd_width) - 1
    pend, idle = field_mask(rm, "STATUS", "track_pending"), field_mask(rm, "STATUS", "dma_idle")
    env.stage("TRACK", op=TrackOp.ARM, tile=0, threshold=1)   # entry 0; the steps use the last
    env.command(CsrCommand.TRACK_WRITE)
    for _ in range(env.answer + 2):
        env.read("STATUS")
    env.write(rm.groups["TRACK"].registers[0].name, 0)       # unlocked again: accepted
    env.read("CSR_ERRORS")
    got = await run_script(env, cycle)
    assert got == [idle | pend] * (env.answer + 1) + [idle, 0], got
    armed = dict(valid=1, rearm=1, threshold=1, count=0, cmd=cmd, pending=0)
    steps = ((dict(op=TrackOp.ARM, threshold=1, cmd=cmd, rearm=1), TrackResult.OK, armed),
             (dict(op=TrackOp.ARM, threshold=1), TrackResult.BUSY, armed),
             (dict(op=TrackOp.ARM, threshold=0), TrackResult.BAD_THRESHOLD, armed),
             (dict(op=TrackOp.READ), TrackResult.OK, armed),
             (dict(op=TrackOp.DISARM), TrackResult.OK, {}),
             (dict(op=TrackOp.DISARM), TrackResult.NOT_ARMED, {}),
             (dict(op=TrackOp.READ), TrackResult.NOT_ARMED, {}),
             (dict(op=3), TrackResult.BAD_OP, {}))
    for fields, code, state in steps:
        _track(env, tile=tile, **fields)
        got = await _read_group(env, cycle, "TRACK_RESULT")
        want = {**dict.fromkeys(got, 0), "op": getattr(fields["op"], "value", fields["op"]),
                "code": code.value, "tile": tile, **state}
        assert got == want, (fields, got, want)


async def atomic_counters(env, cycle):
    """A counter wider than 32 bits read ``_LO`` then ``_HI`` while it goes from
    ``0x0_ffffffff`` to ``0x1_00000000`` between the two reads reads ``0x0_ffffffff`` (the
    ``_HI`` read returns the high word latched by the ``_LO`` read), then ``0x1_00000000``.
    With 32-bit counters there are no ``_HI`` registers and nothing to check."""
    rm = env.map
    await wait_reset(env, cycle)
    pairs = rm.shadowed()
    assert bool(pairs) == (env.p.counter_width > 32)
    for group, port in STATS.items():
        codec = rm.groups[group].codec
        for lo, hi in ((rm.by_name[lo], rm.by_name[hi]) for lo, hi in pairs.items()
                       if rm.by_name[lo].group == group):
            name = lo.fields[0].name
            before, after = codec.pack(**{name: 0xffffffff}), codec.pack(**{name: 1 << 32})
            # The block reads the registers in the cycle after a strobe (its bus register),
            # so the counter carries in the cycle after the _HI strobe: the _LO read sees it
            # before the carry, the _HI read after.
            env.at(lambda v=before: env.stats.__setitem__(port, v))
            env.read(lo.name)
            env.read(hi.name)
            env.at(lambda v=after: env.stats.__setitem__(port, v), (lo.name, None, True))
            env.read(hi.name)
            assert await run_script(env, cycle) == [0xffffffff, 0, 0, 1], (lo.name, hi.name)


async def refused_writes(env, cycle):
    """Per staging group with a read-back table, and per refusal bit its target's errors
    layout has (:data:`~t3hw.spec.contract.CSR_REFUSALS`): a write whose verdict cycle shows
    the bit is not copied into the read-back table; the same bit a cycle early is not a
    refusal (the write is copied)."""
    rm = env.map
    await wait_reset(env, cycle)
    entries = {"REGION": ("addrmap", dict(valid=1, mode=1, device=1, size=4, remote_base=1),
                          env.p.regions),
               "DESC": ("dma", dict(valid=1, op=1, device=1, tile=1, rows=1, row_bytes=1,
                                    pitch=1, src=1, dst=1), env.p.dma_descriptors)}
    k = 0
    for group, (target, fields, depth) in entries.items():
        names = [n for n in CSR_REFUSALS[group]
                 if n in env.targets.models[target].errors_codec.names]
        assert names, group
        for name in names:
            for early in (False, True):
                staged = dict(fields, index=k % depth,
                              **({"base": 16 * k} if group == "REGION" else {}))
                k += 1
                env.stage(group, **staged)
                env.command(CsrCommand[f"{group}_WRITE"])
                # the command acts a cycle after its strobe (the bus register), is taken,
                # then the wait
                env.idle(1 + csr_verdict_delay(env.p)[group] - early)
                env.event(target, **{name: 1})
                env.idle(2)
                env.write(f"{target.upper()}_ERRORS", 0xffffffff)
                env.stage(group, index=staged["index"])
                env.commit(CsrCommand[f"{group}_READ"])
                got = await _read_group(env, cycle, group)
                want = staged if early else {**dict.fromkeys(got, 0), "index": staged["index"]}
                assert got == {**dict.fromkeys(got, 0), **want}, (group, name, early, got)
