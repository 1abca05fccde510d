# SPDX-License-Identifier: Apache-2.0
"""Scenarios of the DMA (:mod:`t3hw.hw.dma`), shared by the amaranth.sim tests and the cocotb
testbench, on a :class:`~t3hw.verif.dma_env.DmaEnv` (which scores every read, packet, error
event and capture against :class:`sim_models.dma.DmaModel` in every cycle).

Each takes the environment and ``cycle``, an async function that runs one clock of it on the
design under test (``env.apply``, settle, ``env.sample``, clock edge): :func:`reset_sweep`,
:func:`drain`, :func:`provoke_errors`, :func:`busy_rewrite`, :func:`abort_mid_descriptor`,
:func:`full_queue`, :func:`back_to_back`, :func:`program_first`.
"""

from sim_models.dma import walk
from t3hw.spec.contract import dma_program_cycles


__all__ = ["reset_sweep", "drain", "provoke_errors", "busy_rewrite", "abort_mid_descriptor",
           "full_queue", "back_to_back", "program_first"]


def _desc(p, *, rows=1, row_bytes=None, **fields):
    """A valid descriptor that fits the parameters (rows ``pitch = row_bytes`` apart unless
    given; one row if no pitch can separate them)."""
    row_bytes = min(row_bytes or 2 * p.burst_bytes, (1 << p.row_bytes_width) - 1)
    rows = min(rows, (1 << p.rows_width) - 1)
    if row_bytes >= 1 << p.pitch_width:
        rows = 1
    desc = dict(valid=1, op=1, device=1, tile=1, rows=rows, row_bytes=row_bytes,
                pitch=row_bytes if rows > 1 else 0, src=0, dst=0)
    desc.update(fields)
    return desc


async def reset_sweep(env, cycle):
    """Run idle cycles until ``busy`` falls; return how many cycles it was high."""
    high = 0
    while True:
        await cycle()
        if not env.last("busy"):
            return high
        high += 1


async def drain(env, cycle, *, limit=100_000):
    """Run until the stimulus is done and the DMA has been idle for two cycles (errors and
    counters show an event the cycle after it), then compare errors and counters."""
    quiet = 0
    for _ in range(limit):
        await cycle()
        quiet = quiet + 1 if env.done() and env.last("idle") else 0
        if quiet == 2:
            env.check_state()
            return
    raise AssertionError(f"not idle after {limit} cycles (cycle {env.cycle})")


async def _expect(env, cycle, name, count=None, **capture):
    """Drain; exactly ``name`` is set (with its counter at ``count``) and the last capture
    has the fields ``capture`` (in the model and in the RTL); then clear."""
    await drain(env, cycle)
    model = env.model
    set_bits = {k for k, v in model.errors.items() if v}
    assert set_bits == {name}, f"expected only {name}, model has {set_bits}"
    if count is not None:
        counter = {"bad_descriptor": "rejected", "read_error": "aborted",
                   "bad_response": "aborted"}.get(name, name)
        assert model.stats[counter] == count, f"{counter} {model.stats[counter]}, not {count}"
    got = env.capture_c.unpack(env.last("capture"))
    for key, value in capture.items():
        assert model.capture[key] == value, f"{name}: model capture {model.capture}"
        assert got[key] == value, f"{name}: capture {got}, expected {key} = {value:#x}"
    env.clear_errors()


async def provoke_errors(env, cycle):
    """Provoke every error bit alone; compare the bit, its counter and the capture."""
    p = env.p
    n, b, top = p.dma_descriptors, p.burst_bytes, 1 << p.addr_width
    big = _desc(p, rows=3, src=0x40, dst=0x80, tile=1)
    # bad_descriptor: a trigger of a descriptor never written (the last index).
    env.fire(n - 1)
    await _expect(env, cycle, "bad_descriptor", 1, index=n - 1, addr=0)
    # bad_program: 0 rows, then 0 bytes per row; the table keeps the old descriptor.
    env.write(0, **big)
    env.write(0, **dict(big, rows=0))
    env.write(0, **dict(big, row_bytes=0))
    env.fire(0)
    await _expect(env, cycle, "bad_program", 2, index=0, tile=1, addr=0x40)
    # bad_pitch: two rows closer than their length.
    if big["rows"] > 1:
        env.write(1, **dict(big, pitch=big["row_bytes"] - 1))
        await _expect(env, cycle, "bad_pitch", 1, index=1, tile=1, addr=0x40)
    # bad_range: the last byte one past the top, at the source then at the destination;
    # a range that ends on the last address is accepted and runs.
    span = (big["rows"] - 1) * big["pitch"] + big["row_bytes"] - 1
    env.write(1, **dict(big, src=top - span))
    env.write(1, **dict(big, dst=top - span))
    env.write(1, **dict(big, src=top - 1 - span, dst=top - 1 - span))
    env.fire(1)
    await _expect(env, cycle, "bad_range", 2, index=1, tile=1, addr=0x40)
    assert env.sent[-1]["addr"] + env.sent[-1]["bytes"] == top
    # desc_busy: reads held, three triggers of descriptor 0 accepted; a rewrite is refused.
    await busy_rewrite(env, cycle)
    # read_error, then a wrong tag: the descriptor is aborted.
    await abort_mid_descriptor(env, cycle, "error")
    await abort_mid_descriptor(env, cycle, "tag")
    # bad_response with no read requested: dropped, nothing aborted.
    before = env.model.stats["aborted"]
    env.spurious = 1
    await _expect(env, cycle, "bad_response", before, index=0, tile=0, addr=0)


async def busy_rewrite(env, cycle):
    """A descriptor with triggers queued (reads held) cannot be rewritten or invalidated:
    both writes are refused with ``desc_busy``, and the queued triggers run the descriptor
    they were accepted with. Once they have run, the rewrite is accepted and runs."""
    p = env.p
    old = _desc(p, rows=2, tile=2, src=0x100, dst=0x200)
    new = _desc(p, rows=2, tile=3, src=0x300, dst=0x400)
    busy = env.model.stats["desc_busy"]
    sent = len(env.sent)
    env.read_stall.hold = True
    env.write(0, **old)
    for _ in range(3):
        env.fire(0)
    for _ in range(40):
        await cycle()
    assert [i for i, _ in env.model.queue] == [0, 0, 0], "the triggers are not all queued"
    env.write(0, **new)
    env.write(0, valid=0)
    for _ in range(2 * dma_program_cycles(p) + 2):    # both taken (one at a time)
        await cycle()
    assert env.prog is None and not env.scripted, "the rewrites were not both taken"
    env.read_stall.hold = False
    await _expect(env, cycle, "desc_busy", busy + 2, index=0, tile=0, addr=0)
    bursts = len(list(walk(p, old)))
    assert [s["tile"] for s in env.sent[sent:]] == [old["tile"]] * (3 * bursts)
    env.write(0, **new)
    env.fire(0)
    await drain(env, cycle)
    assert [s["tile"] for s in env.sent[sent + 3 * bursts:]] == [new["tile"]] * bursts


async def abort_mid_descriptor(env, cycle, fault):
    """A descriptor of several bursts whose second read returns with ``fault`` (``"error"``:
    the error bit; ``"tag"``: a wrong tag) is aborted: its first packet only, and the next
    descriptor runs whole. With few reads outstanding, the walk stops early."""
    p = env.p
    a = _desc(p, rows=3, tile=4, src=0x40, dst=0x1000)
    b = _desc(p, rows=1, tile=5, src=0x800, dst=0x2000)
    env.write(2, **a)
    env.write(3, **b)
    await drain(env, cycle)
    first, sent = len(env.read_cycles), len(env.sent)
    aborted = env.model.stats["aborted"]
    env.faults[first + 1] = fault
    env.fire(2)
    env.fire(3)
    await _expect(env, cycle, "read_error" if fault == "error" else "bad_response",
                  aborted + 1, index=2, tile=4, addr=0x40 + p.burst_bytes)
    bursts_a, bursts_b = len(list(walk(p, a))), len(list(walk(p, b)))
    assert [s["tile"] for s in env.sent[sent:]] == [4] + [5] * bursts_b
    reads = len(env.read_cycles) - first - bursts_b
    assert 2 <= reads <= bursts_a
    if p.max_outstanding + 2 < bursts_a:
        assert reads < bursts_a, "the walk of the aborted descriptor did not stop"


async def full_queue(env, cycle):
    """With reads held, triggers fill the walker, the engine's next-descriptor register, the
    frontend's descriptor register and the ready queue, then wait on ``ready``; none is
    lost. Returns how many were accepted held."""
    p = env.p
    desc = _desc(p, tile=1, src=64, dst=128)
    extra = 3
    capacity = p.dma_ready_depth + 3
    env.read_stall.hold = True
    env.write(0, **desc)
    for _ in range(capacity + extra):
        env.fire(0)
    for _ in range(4 * p.dma_ready_depth + 40):
        await cycle()
    held = env.triggered
    assert held == capacity, f"{held} triggers accepted with reads held"
    assert env.refused > 0, "trigger.ready never fell with the ready queue full"
    env.read_stall.hold = False
    await drain(env, cycle)
    assert env.triggered == capacity + extra
    return held


async def back_to_back(env, cycle, *, runs=3):
    """With no back-pressure and 1-cycle returns, ``runs`` queued descriptors read one burst
    per cycle, with exactly one cycle without a read between two descriptors (the walker
    starts the next one only when idle), when ``max_outstanding`` covers the return loop (4
    reads: a place freed while ``max_outstanding`` are out counts from the cycle after)."""
    p = env.p
    env.latency = 1
    env.read_stall.rate = env.packet_stall.rate = 0
    desc = _desc(p, rows=2, row_bytes=3 * p.burst_bytes, op=1, device=0,
                 pitch=min(4096, (1 << p.pitch_width) - 1))
    for i in range(runs):
        env.write(i % p.dma_descriptors, **desc)
    env.read_stall.hold = True                  # queue every run before the first read
    for i in range(runs):
        env.fire(i % p.dma_descriptors)
    for _ in range(3 * runs + 8):
        await cycle()
    first = len(env.read_cycles)
    env.read_stall.hold = False
    await drain(env, cycle)
    got = env.read_cycles[first:]
    assert len(got) == runs * len(list(walk(p, desc)))
    if p.max_outstanding >= 4:
        per = len(got) // runs
        want = [got[0] + r * (per + 1) + i for r in range(runs) for i in range(per)]
        assert got == want, f"read cycles {got}, expected {want}"
    return got


async def program_first(env, cycle):
    """A descriptor write and a trigger of the same, invalid, descriptor presented in the
    same cycle: the write is taken and the trigger held while the write is checked
    (:func:`~t3hw.spec.contract.dma_program_cycles`); the next cycle the trigger is taken,
    finds the descriptor valid and runs it (nothing rejected)."""
    p = env.p
    index = p.dma_descriptors - 1
    desc = _desc(p, tile=3, src=0x40, dst=0x80)
    env.write(index, valid=0)
    await drain(env, cycle)
    runs = env.triggered
    env.prog = (index, desc)
    env.trig = (index, 0)
    await cycle()
    assert env.prog is None and env.trig is not None, "the write did not go first"
    for _ in range(dma_program_cycles(p) - 1):
        await cycle()
        assert env.trig is not None, "a trigger was taken while a write was checked"
    await cycle()
    assert env.trig is None, "the trigger was not taken after the write's check"
    await drain(env, cycle)
    assert env.triggered == runs + 1 and env.model.stats["rejected"] == 0
