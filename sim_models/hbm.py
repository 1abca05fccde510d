# SPDX-License-Identifier: Apache-2.0
"""HBM2 DRAM timing model: banks, open rows, FR-FCFS controllers, near-memory updates.

One GPU's HBM2 memory system at command level, event-driven, for the performance model and
the co-simulation's DRAM (issue 15). Every figure, its source and the validation are in
``docs/dram.md``; :mod:`sim_models.hbm_check` holds the independent timing checker and the
validation workloads (``python -m sim_models.hbm_check``).

Organisation
------------
``channels`` x ``pseudo_channels`` independent *pseudo-channels* (PCs, 32 x 2 = 64 by
default: four HBM2 stacks of 8 channels at 2 Gb/s per pin, 64 x 16 GB/s = 1.024 TB/s). Each
PC has its own controller (read queue, write queue, scheduler), data bus and ``bank_groups``
x ``banks_per_group`` banks with one open row each (open-page policy). The two PCs of a
channel share its command buses in HBM2; the model gives each PC its own (a PC needs at
most one column command per ``tccd_s``, so two fit on one bus).

Clocks
------
The API counts cycles of the caller's clock (``clock_ghz``, the GPU's 1.4 GHz); the
controllers count DRAM clock cycles (``tck_ps``, 1 GHz). Conversions round up, so a request
submitted at caller cycle ``c`` is seen at the first DRAM edge not before it and a
completion is reported at the first caller edge not before it.

Address mapping
---------------
An address is cut, from the least significant bit, into the offset inside one
``interleave_bytes`` granule (an *access*: bytes that stay in one row of one bank) and then
the fields of ``mapping`` in order: ``ch`` channel, ``pc`` pseudo-channel, ``bg`` bank
group, ``co`` column (granule inside the row), ``ba`` bank, ``ro`` row. The default
``("ch", "pc", "bg", "co", "ba", "ro")`` with 256-B granules spreads consecutive granules
over all 64 PCs, then over the four bank groups of each PC (so a stream keeps both of a
PC's column lanes busy), then along the 1 KB row (row hits), then over banks. Rows wrap
past the capacity.

Scheduling (per PC)
-------------------
A request is split into accesses at granule boundaries; each access queues at its PC, in
the read queue (READ) or the write queue (STORE, UPDATE), both bounded (back-pressure:
:meth:`HbmModel.can_accept`). The PC serves one queue at a time: writes are drained when
the write queue reaches ``write_high`` entries (or no read waits) until it falls to
``write_low`` (or empties). Within the served queue, FR-FCFS: the command that can issue
earliest goes first; at equal times column commands (row hits) before row commands, older
before younger. A bank with hits pending for its open row keeps it open (up to
``row_hit_cap`` hits after its activation), else it is precharged for its oldest access.

Column commands sit on a grid of ``slot = max(tbl, tccd_s)`` cycles, split in
``lanes = ceil(tccd_l / slot)`` interleaved lanes. An access's bursts issue back to back on
one lane, ``lanes * slot`` (>= ``tccd_l``) apart, so two accesses in different bank groups
interleave burst by burst, which is how a stream reaches the peak when ``tccd_l`` is twice
the burst. Reads and writes obey the turnarounds ``trtw`` (read to write) and
``tcwl + tbl + twtr_s/l`` (write to read). Refresh is all-bank per PC (REFab) every
``trefi``, the PCs staggered evenly over one ``trefi``; a due refresh stops new accesses,
precharges the PC and blocks it for ``trfc``.

Near-memory update (UPDATE)
---------------------------
An op-and-store burst is two column commands in its bank: ``URD`` reads the stored burst
into the near-bank ALU (no data on the channel), and ``UWR`` writes the sum, its operand
arriving over the channel like a write's data. The ``n`` URDs of an access issue on its
lane, then the ``n`` UWRs, the first UWR at least ``tcl + talu`` after the first URD (the
array read, then the add). So an update holds its bank group's column path twice as long
as a store of the same bytes, and at least ``ceil((tcl + talu) / (lanes * slot))`` slots
(``docs/dram.md``, "Near-memory update").
"""

import heapq
from dataclasses import dataclass

from .hbm_params import FIELDS, HbmParams
from t3hw.spec.layouts import MemOp


__all__ = ["FIELDS", "HbmParams", "Completion", "HbmModel"]

_READ, _STORE, _UPDATE = MemOp.READ.value, MemOp.STORE.value, MemOp.UPDATE.value
_OPS = {**{m: m.value for m in MemOp}, **{m.value: m.value for m in MemOp}}


@dataclass(frozen=True)
class Completion:
    """A finished request: ``done`` and ``submitted`` in caller cycles."""
    done:      int
    tag:       object
    op:        int
    source:    object
    nbytes:    int
    submitted: int


class _Pc:
    """One pseudo-channel: its queues, bank state and timing horizon (DRAM cycles)."""

    def __init__(self, p, index):
        nb = p.banks
        self.index = index
        self.queues = ([[] for _ in range(nb)], [[] for _ in range(nb)])   # read, write
        self.busy = (set(), set())          # banks with queued accesses, per queue
        self.count = [0, 0]
        self.draining = False
        self.open = [-1] * nb               # open row per bank, -1: closed
        self.hits = [0] * nb                # accesses served since the bank's ACT
        self.kind = [None] * nb             # "miss"/"conflict" until the ACT's first access
        self.act_ok = [0] * nb              # earliest ACT (tRP after PRE, tRC after ACT)
        self.pre_ok = [0] * nb              # earliest PRE (tRAS, tRTP, tWR)
        self.rd_ok = [0] * nb               # earliest RD/URD (tRCD_RD)
        self.wr_ok = [0] * nb               # earliest WR/UWR (tRCD_WR)
        self.bg_col = [0] * p.bank_groups   # earliest column command per group (tCCD_L)
        self.bg_act = [0] * p.bank_groups   # earliest ACT per group (tRRD_L)
        self.bg_wr = [-(1 << 30)] * p.bank_groups   # last write burst per group
        self.lane = [0] * p.lanes
        self.last_rd = self.last_wr = -(1 << 30)
        self.act_any = 0                    # earliest ACT in the PC (tRRD_S)
        self.faw = []                       # last four ACT times
        self.row_bus = 0
        self.ref_due = p.trefi * (index + 1) // p.n_pcs
        self.sched = None                   # time of this PC's valid entry in the heap
        self.now = 0                        # no decision before this time
        self.cache = None                   # the choice beyond the last limit, still valid
        self.fresh = set()                  # banks with accesses newer than the cache
        self.choice = ([None] * nb, [None] * nb)    # per queue and bank: _bank_choice


class HbmModel:
    """One GPU's HBM2 memory system, request in, completion out (module docstring).

    Parameters
    ----------
    params : HbmParams
    record : bool
        Keep every issued command in :attr:`log` as ``(dram cycle, pc, cmd, bank group,
        bank, row, column)``, ``cmd`` one of ACT, PRE, REF, RD, WR, URD, UWR (REF: bank
        fields -1); for :func:`sim_models.hbm_check.check_log`.

    Attributes
    ----------
    stats : dict
        ``row_hits``, ``row_misses`` (bank was closed), ``row_conflicts`` (another row was
        precharged), ``refreshes``, ``accesses`` and ``busy_dram_cycles`` (data-bus cycles
        summed over the PCs).
    bytes : dict
        Bytes issued to the banks per ``(source, op)`` (``op`` a :class:`MemOp` value).
    """

    def __init__(self, params=None, *, record=False):
        self.p = p = params if params is not None else HbmParams()
        if not isinstance(p, HbmParams):
            raise ValueError(f"params must be an HbmParams, not {p!r}")
        self.pcs = [_Pc(p, i) for i in range(p.n_pcs)]
        self.log = [] if record else None
        self._num, self._den = p.ratio.numerator, p.ratio.denominator
        self._slot, self._lanes = p.slot, p.lanes
        self._step = p.slot * p.lanes       # cycles between the bursts of one access
        self._uwr = {}
        self._heap = []                     # (dram time, pc index): next decision
        self._done = []                     # (done caller cycle, seq, Completion)
        self._seq = 0
        self.now = 0                        # caller cycles processed
        self.stats = dict(row_hits=0, row_misses=0, row_conflicts=0, refreshes=0, accesses=0,
                          busy_dram_cycles=0)
        self.bytes = {}
        self._fields = p.fields_at
        for pc in self.pcs:                 # refresh runs whether or not requests come
            pc.sched = pc.ref_due
            heapq.heappush(self._heap, (pc.ref_due, pc.index))

    # -- clocks --------------------------------------------------------------------------
    def _to_dram(self, cycle):
        return -(-cycle * self._num // self._den)

    def _to_caller(self, t):
        return -(-t * self._den // self._num)

    # -- requests ------------------------------------------------------------------------
    def _split(self, addr, nbytes):
        """``(pc, bank, bg, row, col, bursts, bytes)`` of each access of a request."""
        p, f = self.p, self._fields
        g, b = p.interleave_bytes, p.burst_bytes
        (s_ch, m_ch), (s_pc, m_pc), (s_bg, m_bg) = f["ch"], f["pc"], f["bg"]
        (s_co, m_co), (s_ba, m_ba), (s_ro, m_ro) = f["co"], f["ba"], f["ro"]
        out, end = [], addr + nbytes
        while addr < end:
            stop = min(end, (addr // g + 1) * g)
            pc = ((addr >> s_ch) & m_ch) * p.pseudo_channels + ((addr >> s_pc) & m_pc)
            bg = (addr >> s_bg) & m_bg
            col = (((addr >> s_co) & m_co) * g + addr % g) // b
            out.append((pc, bg * p.banks_per_group + ((addr >> s_ba) & m_ba), bg,
                        (addr >> s_ro) & m_ro, col, -(-stop // b) - addr // b, stop - addr))
            addr = stop
        return out

    def can_accept(self, op, addr, nbytes):
        """True if every PC the request touches has room in the queue its op uses."""
        q = 0 if MemOp(op).value == _READ else 1
        cap = self.p.read_queue if q == 0 else self.p.write_queue
        need = {}
        for a in self._split(addr, nbytes):
            need[a[0]] = need.get(a[0], 0) + 1
        return all(self.pcs[i].count[q] + n <= cap for i, n in need.items())

    def submit(self, cycle, op, addr, nbytes, source=None, tag=None):
        """Queue a request at caller cycle ``cycle`` (not before the last one); return False,
        and queue nothing, when a queue it needs is full (back-pressure)."""
        op = _OPS.get(op)
        if op is None:
            op = MemOp(op).value            # raises ValueError naming the value
        if isinstance(addr, bool) or not isinstance(addr, int) or addr < 0:
            raise ValueError(f"addr must be an integer in [0, inf), not {addr!r}")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
            raise ValueError(f"nbytes must be an integer in [1, inf), not {nbytes!r}")
        if cycle < self.now:
            raise ValueError(f"cycle must be in [{self.now}, inf) (requests in time order), "
                             f"not {cycle!r}")
        q = 0 if op == _READ else 1
        cap = self.p.read_queue if q == 0 else self.p.write_queue
        accesses = self._split(addr, nbytes)
        if len(accesses) == 1:
            if self.pcs[accesses[0][0]].count[q] >= cap:
                return False
        elif not self.can_accept(op, addr, nbytes):
            return False
        t = self._to_dram(cycle)
        self._run(t - 1)                    # decisions before the arrival do not see it
        self.now = cycle
        req = [len(accesses), 0, Completion(0, tag, op, source, nbytes, cycle)]
        for pc_i, bank, bg, row, col, n, nb in accesses:
            self._seq += 1
            pc = self.pcs[pc_i]
            pc.now = max(pc.now, t)         # every decision before t is made
            pc.queues[q][bank].append((self._seq, t, bank, bg, row, col, n, op, req, nb))
            pc.busy[q].add(bank)
            pc.fresh.add(bank)
            pc.choice[q][bank] = None
            pc.count[q] += 1
            if pc.sched is None or pc.sched > t:
                pc.sched = t
                heapq.heappush(self._heap, (t, pc_i))
        return True

    # -- time ----------------------------------------------------------------------------
    def advance(self, cycle):
        """Run to caller cycle ``cycle``; return the :class:`Completion` s done by then, in
        order."""
        if cycle < self.now:
            raise ValueError(f"cycle must be in [{self.now}, inf), not {cycle!r}")
        self.now = cycle
        self._run(self._to_dram(cycle + 1) - 1)
        out, done = [], self._done
        while done and done[0][0] <= cycle:
            out.append(heapq.heappop(done)[2])
        return out

    def next_event(self):
        """The earliest caller cycle at which a completion may be due or the controllers
        may act (refresh included), or None if nothing is pending."""
        heap, times = self._heap, []
        while heap and self.pcs[heap[0][1]].sched != heap[0][0]:
            heapq.heappop(heap)             # stale entries
        if self._done:
            times.append(self._done[0][0])
        if self._heap:
            times.append(self._to_caller(self._heap[0][0]))
        return min(times) if times else None

    @property
    def occupancy(self):
        """Accesses waiting in the controllers' queues (not yet issued), all PCs."""
        return sum(pc.count[0] + pc.count[1] for pc in self.pcs)

    def waiting(self, pc):
        """``(reads, writes)``: accesses waiting in PC ``pc``'s two queues (each holds at
        most ``read_queue`` / ``write_queue``)."""
        c = self.pcs[pc].count
        return c[0], c[1]

    @property
    def occupancies(self):
        """:attr:`occupancy` per PC (index ``channel * pseudo_channels + pseudo_channel``)."""
        return [pc.count[0] + pc.count[1] for pc in self.pcs]

    def _run(self, limit):
        """Make every decision at DRAM cycles up to ``limit``."""
        heap = self._heap
        while heap and heap[0][0] <= limit:
            t, i = heapq.heappop(heap)
            pc = self.pcs[i]
            if pc.sched != t:
                continue
            nxt = self._pc_run(pc, limit)
            pc.sched = nxt
            heapq.heappush(heap, (nxt, i))

    # -- one PC --------------------------------------------------------------------------
    def _pc_run(self, pc, limit):
        """Issue this PC's commands up to ``limit``; return the time of its next decision.

        A choice that lies beyond ``limit`` is kept (:attr:`_Pc.cache`): until a command
        issues or the served queue changes, only the banks that received accesses since
        (:attr:`_Pc.fresh`) need a new look, and the better of the two choices stands.
        """
        p = self.p
        while True:
            drain = pc.draining
            if drain:
                if pc.count[1] == 0 or (pc.count[1] <= p.write_low and pc.count[0]):
                    drain = False
            elif pc.count[1] >= p.write_high or (pc.count[1] and not pc.count[0]):
                drain = True
            q = 1 if drain else 0
            if drain != pc.draining:
                pc.draining, pc.cache = drain, None
            best, fresh = pc.cache, pc.fresh & pc.busy[q]
            if best is not None and best[4][2] not in fresh:
                if fresh:
                    other = self._pick(pc, q, fresh)
                    if other is not None and other[:3] < best[:3]:
                        best = other
            elif pc.count[q]:
                best = self._pick(pc, q, pc.busy[q])
            pc.fresh = set()
            if best is None or best[0] >= pc.ref_due:
                pc.cache = None
                if pc.ref_due > limit:
                    return pc.ref_due
                self._refresh(pc)
                continue
            if best[0] > limit:
                pc.cache = best
                return best[0]
            pc.now, pc.cache = best[0], None
            self._issue(pc, best)

    def _pick(self, pc, q, banks):
        """The FR-FCFS choice among ``banks`` in queue ``q``: ``(time, row command?, seq,
        what, access)``, ``what`` a lane for a column access, else ``"PRE"`` or ``"ACT"``.

        Each bank offers one command (:meth:`_bank_choice`, kept until the bank or its queue
        changes); its time is the latest of the bank's, its group's and the PC's limits.
        """
        p = self.p
        now = pc.now                        # decisions are made in time order
        lane_min = max(min(pc.lane), now)
        rd_ok, wr_ok, pre_ok, act_ok = pc.rd_ok, pc.wr_ok, pc.pre_ok, pc.act_ok
        bg_col, bg_wr, bg_act = pc.bg_col, pc.bg_wr, pc.bg_act
        rd_wtr = pc.last_wr + p.tcwl + p.tbl + p.twtr_s
        wtr_l = p.tcwl + p.tbl + p.twtr_l
        wr_rtw = pc.last_rd + p.trtw
        row_bus = max(pc.row_bus, now)
        act_floor = max(pc.act_any, row_bus, pc.faw[0] + p.tfaw if len(pc.faw) == 4 else 0)
        choice = pc.choice[q]
        best, bt, bseq, cols = None, 1 << 62, 0, []
        for bank in banks:
            c = choice[bank]
            if c is None:
                c = choice[bank] = self._bank_choice(pc, q, bank)
            kind, a = c
            if kind == 0:                   # a row hit: column commands
                bg, op = a[3], a[7]
                if op == _READ:
                    t = max(bg_col[bg], rd_ok[bank], rd_wtr, bg_wr[bg] + wtr_l, lane_min)
                elif op == _STORE:
                    t = max(bg_col[bg], wr_ok[bank], wr_rtw, lane_min)
                else:                       # UPDATE: URDs from t, UWRs from t + w
                    w = self._uwr_offset(a[6]) * self._step
                    t = max(bg_col[bg], rd_ok[bank], wr_ok[bank] - w, wr_rtw - w, lane_min)
                cols.append((t, a[0], a))
                continue
            if kind == 1:
                t = pre_ok[bank] if pre_ok[bank] > row_bus else row_bus
            else:
                t = max(act_ok[bank], bg_act[a[3]], act_floor)
            if t < bt or (t == bt and a[0] < bseq):
                best, bt, bseq = (t, 1, a[0], "PRE" if kind == 1 else "ACT", a), t, a[0]
        if cols:
            # The lane grid rounds a time up to the first free slot, R for the earliest
            # column candidate; every candidate ready by R rounds to R too, so the oldest
            # of those goes first (row hits before row commands at equal times).
            r, lane = self._on_lane(pc, min(cols)[0])
            if r <= bt:
                seq, a = min((c[1], c[2]) for c in cols if c[0] <= r)
                best = (r, 0, seq, lane, a)
        return best

    def _bank_choice(self, pc, q, bank):
        """What ``bank`` offers from queue ``q``: ``(0, hit)`` column commands for its
        oldest row hit, else ``(1, head)`` a PRE or ``(2, head)`` an ACT for its oldest
        access (a hit is passed over once ``row_hit_cap`` hits followed the ACT and an
        access to another row waits)."""
        accs = pc.queues[q][bank]
        head, row = accs[0], pc.open[bank]
        if row < 0:
            return 2, head
        hit = head if head[4] == row else next((a for a in accs if a[4] == row), None)
        if hit is None or (pc.hits[bank] >= self.p.row_hit_cap and
                           any(a[4] != row for a in accs)):
            return 1, head
        return 0, hit

    def _on_lane(self, pc, t):
        """The first column slot at or after ``t`` on a free lane: ``(time, lane)``."""
        slot, lanes = self._slot, self._lanes
        best = None
        for k, free in enumerate(pc.lane):
            s = -(-max(t, free) // slot)
            s += (k - s) % lanes
            if best is None or s * slot < best[0]:
                best = (s * slot, k)
        return best

    def _uwr_offset(self, n):
        """Lane steps from an update's first URD to its first UWR."""
        w = self._uwr.get(n)
        if w is None:
            w = self._uwr[n] = max(n, -(-(self.p.tcl + self.p.talu) // self._step))
        return w

    def _take(self, pc, a):
        q = 0 if a[7] == _READ else 1
        accs = pc.queues[q][a[2]]
        accs.remove(a)
        if not accs:
            pc.busy[q].discard(a[2])
        pc.count[q] -= 1

    def _issue(self, pc, best):
        p, log = self.p, self.log
        t, _, _, what, a = best
        bank, bg, row = a[2], a[3], a[4]
        pc.choice[0][bank] = pc.choice[1][bank] = None
        if what == "PRE":
            self._precharge(pc, bank, t)
            pc.kind[bank] = "conflict"
            return
        if what == "ACT":
            pc.open[bank], pc.hits[bank] = row, 0
            pc.kind[bank] = "conflict" if pc.kind[bank] == "conflict" else "miss"
            pc.pre_ok[bank] = max(pc.pre_ok[bank], t + p.tras)
            pc.act_ok[bank] = t + p.trc
            pc.rd_ok[bank], pc.wr_ok[bank] = t + p.trcd_rd, t + p.trcd_wr
            pc.act_any, pc.bg_act[bg], pc.row_bus = t + p.trrd_s, t + p.trrd_l, t + 1
            pc.faw = pc.faw[-3:] + [t]
            if log is not None:
                log.append((t, pc.index, "ACT", bg, bank, row, -1))
            return
        self._take(pc, a)                   # a column access on lane ``what``
        st = self.stats
        st["accesses"] += 1
        kind = pc.kind[bank]
        st["row_conflicts" if kind == "conflict" else "row_misses" if kind else "row_hits"] += 1
        pc.kind[bank] = None
        pc.hits[bank] += 1
        op, n, col = a[7], a[6], a[5]
        step = self._step
        if op == _UPDATE:
            w = self._uwr_offset(n)
            if log is not None:
                for i in range(n):
                    log.append((t + i * step, pc.index, "URD", bg, bank, row, col + i))
                    log.append((t + (w + i) * step, pc.index, "UWR", bg, bank, row, col + i))
            last = t + (w + n - 1) * step
        else:
            if log is not None:
                cmd = "RD" if op == _READ else "WR"
                log.extend((t + i * step, pc.index, cmd, bg, bank, row, col + i)
                           for i in range(n))
            last = t + (n - 1) * step
        pc.lane[what] = last + step
        pc.bg_col[bg] = last + p.tccd_l
        if op == _READ:
            pc.last_rd = max(pc.last_rd, last)
            pc.pre_ok[bank] = max(pc.pre_ok[bank], last + p.trtp)
            done = last + p.tcl + p.tbl
        else:
            pc.last_wr = max(pc.last_wr, last)
            pc.bg_wr[bg] = max(pc.bg_wr[bg], last)
            pc.pre_ok[bank] = max(pc.pre_ok[bank], last + p.tcwl + p.tbl + p.twr)
            done = last + p.tcwl + p.tbl
        st["busy_dram_cycles"] += n * p.tbl
        req = a[8]
        req[0] -= 1
        req[1] = max(req[1], done)
        c = req[2]
        key = (c.source, c.op)
        self.bytes[key] = self.bytes.get(key, 0) + a[9]
        if not req[0]:
            self._seq += 1
            cyc = self._to_caller(req[1])
            heapq.heappush(self._done, (cyc, self._seq, Completion(
                cyc, c.tag, c.op, c.source, c.nbytes, c.submitted)))

    def _precharge(self, pc, bank, t):
        pc.open[bank] = -1
        pc.act_ok[bank] = max(pc.act_ok[bank], t + self.p.trp)
        pc.row_bus = t + 1
        if self.log is not None:
            self.log.append((t, pc.index, "PRE", -1, bank, -1, -1))

    def _refresh(self, pc):
        """Precharge every open bank, then REFab; the PC is blocked for ``trfc``."""
        p = self.p
        t = pc.ref_due
        for bank in range(p.banks):
            if pc.open[bank] >= 0:
                pre = max(t, pc.pre_ok[bank], pc.row_bus)
                self._precharge(pc, bank, pre)
                pc.kind[bank] = None
        ref = max([t, pc.row_bus] + pc.act_ok)
        pc.choice = ([None] * p.banks, [None] * p.banks)
        if self.log is not None:
            self.log.append((ref, pc.index, "REF", -1, -1, -1, -1))
        pc.row_bus = ref + 1
        pc.act_ok = [ref + p.trfc] * p.banks
        pc.ref_due += p.trefi
        self.stats["refreshes"] += 1
