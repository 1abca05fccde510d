# SPDX-License-Identifier: Apache-2.0
"""Python driver of the register block (:mod:`t3hw.hw.csr`): the software side of T3.

:class:`Driver` programs one engine through any :class:`~t3hw.sw.bus.Bus` (``async
write(addr, value)`` and ``async read(addr) -> int``; byte addresses, 32-bit data): the
simulated register block under cocotb, the register-file model with no RTL, or a board over
its UART (:mod:`t3hw.sw.bus` lists them).

The API follows T3's two calls (``T3.md``): :meth:`Driver.remote_map` (stores to a range go
to a peer GPU as remote updates) and :meth:`Driver.dma_map` (a tile is tracked; when it is
complete, a pre-programmed DMA sends it on), over the register-level calls
(:meth:`~Driver.program_region`, :meth:`~Driver.program_descriptor`, :meth:`~Driver.arm`,
their read-backs, :meth:`~Driver.read_entry`, :meth:`~Driver.errors`,
:meth:`~Driver.first_errors`, :meth:`~Driver.stats`), the interrupt
(:meth:`~Driver.enable_irq`, :meth:`~Driver.irq`), the device number
(:meth:`~Driver.set_device_id`), and the memory-controller arbiter's configuration
(:meth:`~Driver.program_arbiter`, :meth:`~Driver.arbiter_status`).
:func:`program_ring_reduce_scatter` programs one GPU of a fused GEMM + ring reduce-scatter.

Every register address and field comes from :class:`t3hw.spec.regmap.RegisterMap`.
"""

from t3hw.spec.contract import MAX_WINDOW_LOG2
from t3hw.spec.layouts import ArbPolicy, CsrCommand, RegionMode, TrackOp, TrackResult, WriteKind
from t3hw.spec.params import EngineParams, check_params
from t3hw.spec.regmap import CAPTURES, COUNTERS, ERRORS, IRQ_ENABLES, MAGIC, RegisterMap


__all__ = ["Driver", "ring_reduce_scatter_plan", "program_ring_reduce_scatter"]


class Driver:
    """Programs one engine through its register block.

    Parameters
    ----------
    bus : Bus
        ``async write(addr, value)`` and ``async read(addr) -> int``
        (:class:`~t3hw.sw.bus.Bus`).
    params : EngineParams
        The engine's parameters (:meth:`check` compares them with the hardware's).
    poll_limit : int
        Reads of ``STATUS`` before a wait for a busy target gives up (RuntimeError).

    Commands are issued only when their group is not pending (the driver polls ``STATUS``
    first), and a read-back (:meth:`read_region`, :meth:`read_descriptor`) reads the group
    only once ``STATUS`` shows its load done, so a driver never provokes the block's ``busy``
    error, whatever the bus's latency. Errors of the targets
    (a rejected region, descriptor or arm) are sticky in the error registers: read them with
    :meth:`errors`, and the details of the first one of each target with
    :meth:`first_errors`. A tracker request returns the tracker's verdict (:meth:`arm`,
    :meth:`disarm`; :meth:`arm` raises on a refusal with ``check=True``). A rejected arbiter
    configuration raises at once (:meth:`program_arbiter`).
    """

    def __init__(self, bus, params: EngineParams = EngineParams(), *, poll_limit=10_000):
        check_params(params)
        if isinstance(poll_limit, bool) or not isinstance(poll_limit, int) or poll_limit < 1:
            raise ValueError(f"poll_limit must be a positive integer, not {poll_limit!r}")
        self.bus, self.params, self.poll_limit = bus, params, poll_limit
        self.map = RegisterMap(params)
        self.regions_used = set()       # region indices this driver has mapped

    # -- registers -------------------------------------------------------------------------
    async def write(self, addr, value):
        """Write ``value`` to byte address ``addr``."""
        await self.bus.write(addr, value)

    async def read(self, addr):
        """Read byte address ``addr``."""
        return await self.bus.read(addr)

    async def read_group(self, group):
        """Read every register of ``group``; return its fields."""
        regs = self.map.groups[group].registers
        return self.map.decode(group, {r.name: await self.read(r.addr) for r in regs})

    async def write_group(self, group, **fields):
        """Write every register of ``group`` with ``fields`` (missing fields 0)."""
        for reg, word in self.map.encode(group, **fields):
            await self.write(reg.addr, word)

    async def status(self):
        """The ``STATUS`` fields."""
        return await self.read_group("STATUS")

    async def wait(self, *names):
        """Poll ``STATUS`` until the named fields (default: every busy and pending flag,
        that is every field but ``dma_idle`` and ``irq``) are 0."""
        names = names or tuple(n for n in self.map.groups["STATUS"].codec.names
                               if n not in ("dma_idle", "irq"))
        for _ in range(self.poll_limit):
            status = await self.status()
            if not any(status[n] for n in names):
                return
        raise RuntimeError(f"STATUS still has {[n for n in names if status[n]]} after "
                           f"{self.poll_limit} reads")

    async def check(self):
        """Wait for the reset sweeps; check ``ID`` and that ``CONFIG`` matches the params."""
        await self.wait()
        magic = (await self.read_group("ID"))["magic"]
        if magic != MAGIC:
            raise RuntimeError(f"ID.magic must be {MAGIC:#010x}, not {magic:#010x}")
        config, expect = await self.read_group("CONFIG"), self.map.constant("CONFIG")
        if config != expect:
            raise RuntimeError(f"CONFIG {config} does not match the driver's parameters "
                               f"{expect}")

    async def _command(self, group, command, fields):
        busy = {"REGION": ("sweep",), "DESC": ("sweep", "dma_busy"),
                "TRACK": ("tracker_busy",), "ARB": ()}[group]
        await self.wait(f"{group.lower()}_pending", *busy)
        await self.write_group(group, **fields)
        await self.write_group("COMMAND", command=command)

    async def _load(self, group, command, index):
        await self._command(group, command, {"index": index})
        await self.wait(f"{group.lower()}_pending")     # the load into the staging registers
        fields = await self.read_group(group)
        del fields["index"]
        return fields

    # -- the address map -------------------------------------------------------------------
    async def program_region(self, index, *, mode, base, size, device=0, remote_base=0):
        """Region ``index`` = ``[base, base + size)`` in ``mode`` (a ``RegionMode``)."""
        await self._command("REGION", CsrCommand.REGION_WRITE, dict(
            index=index, valid=1, mode=mode, device=device, base=base, size=size,
            remote_base=remote_base))
        self.regions_used.add(index)

    async def clear_region(self, index):
        """Remove region ``index``."""
        await self._command("REGION", CsrCommand.REGION_WRITE, dict(index=index, valid=0))
        self.regions_used.discard(index)

    async def read_region(self, index):
        """Region ``index`` as the address map stores it (fields of ``region_layout``): its
        index staged, ``REGION_READ``, ``STATUS`` polled until ``region_pending`` is 0 (the
        load takes :data:`t3hw.spec.contract.CSR_LOAD_CYCLES` cycles), then the group read."""
        return await self._load("REGION", CsrCommand.REGION_READ, index)

    def _free_region(self):
        free = [i for i in range(self.params.regions) if i not in self.regions_used]
        if not free:
            raise RuntimeError(f"all {self.params.regions} regions are mapped; clear one")
        return free[0]

    async def remote_map(self, base, size, device, remote_base, *, index=None):
        """Stores to ``[base, base + size)`` go to ``device`` at ``remote_base + (addr -
        base)`` as remote updates. Returns the region index (the lowest free by default)."""
        index = self._free_region() if index is None else index
        await self.program_region(index, mode=RegionMode.REMOTE, base=base, size=size,
                                  device=device, remote_base=remote_base)
        return index

    async def track_map(self, base, size, *, index=None):
        """Stores to ``[base, base + size)`` stay local and are tracked. Returns the index."""
        index = self._free_region() if index is None else index
        await self.program_region(index, mode=RegionMode.TRACKED, base=base, size=size)
        return index

    # -- the DMA and the tracker -----------------------------------------------------------
    async def program_descriptor(self, index, *, src, rows, row_bytes, pitch, device, dst,
                                 tile, op=WriteKind.UPDATE):
        """DMA descriptor ``index``: ``rows`` x ``row_bytes`` from ``src`` (rows ``pitch``
        apart) to ``dst`` on ``device``, as ``op``, counted there under ``tile``.

        The DMA refuses a write to a descriptor in use (a trigger for it accepted and not yet
        started): the driver retries it until the DMA has started those triggers
        (:meth:`_write_descriptor`). A descriptor refused for its content (0 rows or bytes,
        ``pitch < row_bytes`` with several rows, a range that wraps) is not retried: its
        ``DMA_ERRORS`` bit (``bad_program``, ``bad_pitch``, ``bad_range``) stays set; read
        it with :meth:`errors`."""
        await self._write_descriptor(dict(
            index=index, valid=1, op=op, device=device, tile=tile, rows=rows,
            row_bytes=row_bytes, pitch=pitch, src=src, dst=dst))

    async def clear_descriptor(self, index):
        """Invalidate descriptor ``index`` (retried while it is in use, as a write)."""
        await self._write_descriptor(dict(index=index, valid=0))

    async def _write_descriptor(self, fields):
        """``DESC_WRITE`` of ``fields``, retried while the DMA refuses it as in use.

        Each try clears ``DMA_ERRORS.desc_busy`` (write one to clear, that bit only), sends
        the write, waits until it has been sent (``desc_pending``) and reads
        ``DMA_ERRORS``; ``desc_busy`` set means the table is unchanged because triggers of
        the descriptor wait in the DMA, which then needs time (and the link) to start them:
        the driver reads ``STATUS`` once and tries again, at most ``poll_limit`` tries.
        A refusal that was retried leaves ``desc_busy`` clear (its counter still counts it).

        Raises
        ------
        RuntimeError
            Still refused as in use after ``poll_limit`` tries (the DMA is not starting
            descriptors: its reads or packets are held); the table is unchanged.
        """
        for _ in range(self.poll_limit):
            await self.write_group("DMA_ERRORS", desc_busy=1)
            await self._command("DESC", CsrCommand.DESC_WRITE, fields)
            await self.wait("desc_pending")
            if not (await self.read_group("DMA_ERRORS"))["desc_busy"]:
                return
            await self.status()
        raise RuntimeError(f"descriptor {fields['index']} still in use after "
                           f"{self.poll_limit} tries (DMA_ERRORS.desc_busy): triggers of it "
                           f"wait in the DMA, which is not starting descriptors")

    async def read_descriptor(self, index):
        """Descriptor ``index`` as the DMA stores it (fields of ``dma_descriptor_layout``),
        read back like :meth:`read_region` (``DESC_READ``, then ``desc_pending`` polled)."""
        return await self._load("DESC", CsrCommand.DESC_READ, index)

    async def track(self, op, tile, *, threshold=0, cmd=0, rearm=False):
        """Send one tracker request (``TRACK_*``, then ``TRACK_WRITE``), wait for its answer
        (``STATUS.track_pending`` falls when it arrives) and return it: the fields of
        ``TRACK_RESULT`` (:func:`~t3hw.spec.layouts.tracker_result_layout`), ``code`` as a
        :class:`~t3hw.spec.layouts.TrackResult`.

        Raises
        ------
        RuntimeError
            The answer is not for this request (its ``op`` or ``tile`` differ).
        """
        await self._command("TRACK", CsrCommand.TRACK_WRITE, dict(
            op=op, tile=tile, threshold=threshold, cmd=cmd, rearm=int(rearm)))
        await self.wait("track_pending")
        result = await self.read_group("TRACK_RESULT")
        if (result["op"], result["tile"]) != (getattr(op, "value", op), tile):
            raise RuntimeError(f"TRACK_RESULT {result} does not answer op {op!r} of tile "
                               f"{tile}")
        result["code"] = TrackResult(result["code"])
        return result

    async def arm(self, tile, threshold, cmd, *, rearm=False, check=False):
        """Arm the tracker entry of ``tile``: ``threshold`` beats fire DMA command ``cmd``.

        Returns the tracker's verdict, a :class:`~t3hw.spec.layouts.TrackResult`: ``OK``
        (armed), ``BUSY`` (the entry is armed, or its trigger has not been taken yet: nothing
        changed, ``TRACKER_ERRORS.reprogram``) or ``BAD_THRESHOLD`` (threshold 0: nothing
        changed, ``TRACKER_ERRORS.bad_threshold``). With ``check``, a verdict other than
        ``OK`` raises :exc:`RuntimeError` instead.
        """
        code = (await self.track(TrackOp.ARM, tile, threshold=threshold, cmd=cmd,
                                 rearm=rearm))["code"]
        if check and code != TrackResult.OK:
            why = {TrackResult.BUSY: "its entry is armed, or its last trigger is still "
                                     "pending (disarm it, or wait for the DMA)",
                   TrackResult.BAD_THRESHOLD: "the threshold must be at least 1"}
            raise RuntimeError(f"the tracker refused to arm tile {tile} ({code.name}): "
                               f"{why.get(code, 'unexpected verdict')}")
        return code

    async def disarm(self, tile):
        """Disarm the tracker entry of ``tile`` (if it is armed for it). Returns the verdict:
        ``TrackResult.OK``, or ``TrackResult.NOT_ARMED`` (nothing done)."""
        return (await self.track(TrackOp.DISARM, tile))["code"]

    async def read_entry(self, tile):
        """The tracker entry of ``tile`` (a ``READ`` request): ``code`` (``TrackResult.OK``,
        or ``NOT_ARMED`` when no entry is armed for ``tile``), ``valid``, ``rearm``,
        ``pending`` (firings the DMA has not taken yet), ``threshold``, ``count`` (beats
        counted) and ``cmd``."""
        result = await self.track(TrackOp.READ, tile)
        del result["op"], result["tile"]
        return result

    async def dma_map(self, tile, threshold, *, src, rows, row_bytes, pitch, device, dst,
                      op=WriteKind.UPDATE, dst_tile=None, cmd=None, rearm=False):
        """Track ``tile``: when ``threshold`` beats have been written to it, send it with a
        DMA (the descriptor fields, ``dst_tile`` defaulting to ``tile``). The descriptor index
        ``cmd`` defaults to ``tile mod 2**cmd_width``, so tiles that share the tracker table
        (consecutive ids) never share a descriptor. If triggers of ``cmd`` from an earlier
        mapping still wait in the DMA, the descriptor write waits for them to start (see
        :meth:`program_descriptor`), so they send what they were armed with. Returns
        ``cmd``."""
        cmd = tile % self.params.dma_descriptors if cmd is None else cmd
        await self.program_descriptor(cmd, src=src, rows=rows, row_bytes=row_bytes,
                                      pitch=pitch, device=device, dst=dst, op=op,
                                      tile=tile if dst_tile is None else dst_tile)
        await self.arm(tile, threshold, cmd, rearm=rearm)
        return cmd

    # -- the arbiter -----------------------------------------------------------------------
    async def program_arbiter(self, *, policy, threshold=0, saturation=None, window_log2=None,
                              starvation_limit=None):
        """Configure the memory-controller arbiter (the ``ARB_*`` registers, then ARB_WRITE).

        Parameters
        ----------
        policy : ArbPolicy, str or int
            The policy, its name in any case (``"t3_mca"``) or its code.
        threshold : int
            T3-MCA: communication issues only while the DRAM occupancy is below it; 0 (the
            default) derives it from the compute request rate.
        saturation, window_log2, starvation_limit : int, optional
            The derivation's saturation occupancy and window (``2**window_log2`` cycles), and
            the issue slots communication may wait under T3-MCA. By default the parameters'
            values after reset (``mca_saturation``, ``mca_window_log2``,
            ``starvation_limit``).

        The driver waits until no ARB_WRITE is pending, clears ``ARBITER_ERRORS.bad_config``,
        writes the configuration, waits until it has been sent and reads ``bad_config``.

        Raises
        ------
        ValueError
            An unknown policy name, or a field out of its range (nothing is written).
        RuntimeError
            The arbiter rejected the configuration (``ARBITER_ERRORS.bad_config``, left set):
            the one in effect stays.
        """
        if isinstance(policy, str):
            try:
                policy = ArbPolicy[policy.upper()]
            except KeyError:
                raise ValueError(f"policy must be one of "
                                 f"{[p.name.lower() for p in ArbPolicy]}, not {policy!r}") \
                    from None
        given = dict(saturation=saturation, window_log2=window_log2,
                     starvation_limit=starvation_limit)
        config = {**self.map.reset("ARB"), "policy": policy, "threshold": threshold,
                  **{k: v for k, v in given.items() if v is not None}}
        self.map.encode("ARB", **config)                # range check before any access
        await self.wait("arb_pending")
        await self.write_group("ARBITER_ERRORS", bad_config=1)      # W1C: an older rejection
        await self._command("ARB", CsrCommand.ARB_WRITE, config)
        await self.wait("arb_pending")
        if (await self.read_group("ARBITER_ERRORS"))["bad_config"]:
            shown = {k: getattr(v, "name", v) for k, v in config.items()}
            raise RuntimeError(f"the arbiter rejected the configuration {shown} "
                               f"(ARBITER_ERRORS.bad_config: starvation_limit 0, window_log2 "
                               f"above {MAX_WINDOW_LOG2}, or threshold and saturation both 0); "
                               f"the previous configuration stays in effect")

    async def arbiter_status(self):
        """What the arbiter uses (``ARB_STATUS``): ``policy`` (its code), the T3-MCA
        ``threshold`` in effect (0 while it is derived) and ``measuring``."""
        return await self.read_group("ARB_STATUS")

    # -- device --------------------------------------------------------------------------
    async def set_device_id(self, device):
        """This engine's device number (``DEVICE_ID``): the address map refuses received
        packets for another device. Raises ValueError if it does not fit ``device_width``."""
        await self.write_group("DEVICE_ID", device=device)

    async def device_id(self):
        """The ``DEVICE_ID`` register."""
        return (await self.read_group("DEVICE_ID"))["device"]

    # -- errors, interrupt and counters --------------------------------------------------
    _ERRORS = ERRORS

    async def errors(self):
        """Every sticky error bit, after the commands in flight are done:
        ``{block: {bit: 0 or 1}}`` for ``csr``, ``tracker``, ``dma``, ``addrmap`` and
        ``arbiter``."""
        await self.wait(*(n for n in self.map.groups["STATUS"].codec.names
                          if n.endswith("_pending")))
        return {block: await self.read_group(group) for block, group in self._ERRORS.items()}

    async def clear_errors(self):
        """Clear every sticky error bit (write 1s to every error register). The next error
        of a target is then its first (:meth:`first_errors`)."""
        for group in self._ERRORS.values():
            for reg in self.map.groups[group].registers:
                await self.write(reg.addr, reg.mask)

    async def first_errors(self):
        """The details of each target's first error since its error bits were last all
        clear: ``{block: fields}`` for ``tracker``, ``dma``, ``addrmap``, the fields of the
        block's capture layout and ``events`` (``{bit: 0 or 1}``: the error events of that
        cycle). All zero until the block's first error after reset."""
        out = {}
        for block, group in CAPTURES.items():
            fields = await self.read_group(group)
            events = self.map.groups[self._ERRORS[block]].codec.unpack(fields["events"])
            out[block] = {**fields, "events": events}
        return out

    async def enable_irq(self, block, *bits):
        """Let the named error bits of ``block`` (``csr``, ``tracker``, ``dma``, ``addrmap``,
        ``arbiter``; no names: all of them) raise the ``irq`` output; the block's other bits
        no longer do (:meth:`disable_irq` disables them all)."""
        group = IRQ_ENABLES[self._ERRORS[block]]
        names = bits or self.map.groups[group].codec.names
        await self.write_group(group, **dict.fromkeys(names, 1))

    async def disable_irq(self, block=None):
        """No error bit of ``block`` (default: of any block) raises ``irq``."""
        for name in (block,) if block is not None else self._ERRORS:
            await self.write_group(IRQ_ENABLES[self._ERRORS[name]])

    async def irq(self):
        """The enabled error bits that hold ``irq`` high: ``{block: [bit names]}`` of the
        blocks with any (empty when ``STATUS.irq`` is 0). ``irq`` falls once they are
        cleared (:meth:`clear_errors`) or disabled."""
        if not (await self.status())["irq"]:
            return {}
        out = {}
        for block, group in self._ERRORS.items():
            sticky = await self.read_group(group)
            enabled = await self.read_group(IRQ_ENABLES[group])
            names = [n for n, v in sticky.items() if v and enabled[n]]
            if names:
                out[block] = names
        return out

    async def stats(self):
        """Every counter: ``{block: {counter: int}}`` for ``tracker``, ``dma``, ``addrmap``,
        ``arbiter``. A counter wider than 32 bits is read low word first, then high word:
        the hardware latches the high word on the low word's read, so the pair is one
        snapshot (read ``_LO`` before ``_HI``; :meth:`read_group` does)."""
        return {block: await self.read_group(group) for block, group in COUNTERS.items()}


def ring_reduce_scatter_plan(producer, params: EngineParams = EngineParams(), *, gather=True):
    """What :func:`program_ring_reduce_scatter` programs for one GPU.

    Parameters
    ----------
    producer : sim_models.gpu.GemmProducer
        The GPU's GEMM (``n_gpus``, ``gpu_index``, ``chunks``, ``stage_chunk``,
        ``store_region``); every chunk must be whole rows of tiles (one address range).
    params : EngineParams
        ``burst_bytes`` is the tracker's beat; thresholds must fit ``count_width``.
    gather : bool
        The own chunk (the last stage's) is tracked too, and each of its tiles, once fully
        reduced, is copied (``STORE``) to GPU i-1: the first step of the all-gather. Without
        it the own chunk is a ``LOCAL`` region and is not tracked.

    Returns
    -------
    dict
        ``regions``: ``{index: region fields}`` (region ``c`` is chunk ``c``);
        ``entries``: ``{tile: (threshold, cmd)}``; ``descriptors``: ``{cmd: fields}``.

    GPU i's stage-0 chunk goes to GPU i-1 as remote updates at the same addresses; every
    other chunk is tracked locally. Each tile of stages 1 .. N-1 is armed with a threshold of
    its local stores plus the neighbour's update of it, in beats of ``burst_bytes`` (both
    walk the tile row by row in bursts); its trigger runs descriptor ``tile mod 2**cmd_width``,
    which sends the tile to GPU i-1 as an update (stages 1 .. N-2) or a copy (the own chunk).
    """
    n, i = producer.n_gpus, producer.gpu_index
    if n > params.regions:
        raise ValueError(f"n_gpus must be in [1, {params.regions}] (one region per chunk), "
                         f"not {n!r}")
    prev = (i - 1) % n
    spans = []
    for c, tiles in enumerate(producer.chunks):
        ends = []
        for t in tiles:
            addr, rows, row_bytes, pitch = producer.store_region(t)
            ends.append((addr, addr + (rows - 1) * pitch + row_bytes))
        spans.append((min(a for a, _ in ends), max(e for _, e in ends)))
    for c, (lo, hi) in enumerate(spans):
        if any(lo < h and l < hi for d, (l, h) in enumerate(spans) if d != c):
            raise ValueError(f"chunk {c} must be whole rows of tiles (its range overlaps "
                             f"another chunk's)")
    first, own = producer.stage_chunk(0), producer.stage_chunk(n - 1)
    regions = {}
    for c, (lo, hi) in enumerate(spans):
        if c == first:
            regions[c] = dict(mode=RegionMode.REMOTE, base=lo, size=hi - lo, device=prev,
                              remote_base=lo)
        else:
            mode = RegionMode.LOCAL if c == own and not gather else RegionMode.TRACKED
            regions[c] = dict(mode=mode, base=lo, size=hi - lo, device=0, remote_base=0)
    entries, descriptors = {}, {}
    tracked = [t for s in range(1, n if gather else n - 1)
               for t in producer.chunks[producer.stage_chunk(s)]]
    depth = min(params.tracker_entries, params.dma_descriptors)
    if max(tracked, default=0) - min(tracked, default=0) >= depth:
        raise ValueError(f"tracked tile ids must span at most {depth} (tracker entries and "
                         f"descriptors), not {max(tracked) - min(tracked) + 1}")
    for t in tracked:
        addr, rows, row_bytes, pitch = producer.store_region(t)
        beats = 2 * rows * -(-row_bytes // params.burst_bytes)
        if beats > params.max_threshold:
            raise ValueError(f"tile {t} needs a threshold of {beats} beats; count_width must "
                             f"hold it (at most {params.max_threshold})")
        cmd = t % params.dma_descriptors
        entries[t] = (beats, cmd)
        op = WriteKind.STORE if t in producer.chunks[own] else WriteKind.UPDATE
        descriptors[cmd] = dict(src=addr, rows=rows, row_bytes=row_bytes, pitch=pitch,
                                device=prev, dst=addr, op=op, tile=t)
    return {"regions": regions, "entries": entries, "descriptors": descriptors}


async def program_ring_reduce_scatter(driver, producer, *, gather=True):
    """Program GPU ``producer.gpu_index`` of a fused GEMM + ring reduce-scatter through
    ``driver``: regions, descriptors and tracker entries of :func:`ring_reduce_scatter_plan`
    (descriptors before the entries that trigger them). Returns the plan.

    Raises :exc:`RuntimeError` if any error bit is set afterwards.
    """
    plan = ring_reduce_scatter_plan(producer, driver.params, gather=gather)
    await driver.check()
    for index, r in plan["regions"].items():
        if r["mode"] == RegionMode.REMOTE:
            await driver.remote_map(r["base"], r["size"], r["device"], r["remote_base"],
                                    index=index)
        elif r["mode"] == RegionMode.TRACKED:
            await driver.track_map(r["base"], r["size"], index=index)
        else:
            await driver.program_region(index, **r)
    for tile, (threshold, cmd) in plan["entries"].items():
        desc = plan["descriptors"][cmd]
        await driver.dma_map(tile, threshold, cmd=cmd, dst_tile=desc["tile"],
                             **{k: v for k, v in desc.items() if k != "tile"})
    errors = await driver.errors()
    bad = {block: [k for k, v in bits.items() if v] for block, bits in errors.items()}
    if any(bad.values()):
        raise RuntimeError(f"errors after programming the ring: {bad}")
    return plan
