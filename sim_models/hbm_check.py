# SPDX-License-Identifier: Apache-2.0
"""Checks and validation workloads of the HBM2 model (:mod:`sim_models.hbm`).

* :func:`check_log` replays an issued-command log (``HbmModel(record=True).log``) against
  every timing rule of :class:`~sim_models.hbm.HbmParams`, with its own bank and bus state
  built from the log alone, and returns the violations. It shares no code with the
  scheduler: the scheduler computes when a command *may* issue, the checker verifies, pair
  by pair, that what was issued respects each JEDEC constraint.
* :func:`run_stream` drives the model closed-loop (every cycle, requests until the queues
  refuse one) with a sequential or random address stream and measures bandwidth, latency,
  row-buffer outcomes and the model's own speed.
* ``python -m sim_models.hbm_check`` prints the validation table of ``docs/dram.md``.
"""

import argparse
import random
import time
from collections import defaultdict

from .hbm import HbmModel, HbmParams
from t3hw.spec.layouts import MemOp


__all__ = ["DRAMSIM3_HBM2", "DRAMSIM3_MEASURED", "check_log", "refresh_times", "run_stream",
           "validation_table", "write_traces", "main"]

_ROW_CMDS = ("ACT", "PRE", "REF")


def check_log(p, log, *, limit=50):
    """Violations (strings, at most ``limit``) of the timing rules in ``log`` under ``p``.

    Rules, per pseudo-channel (DRAM cycles; "column" is RD, WR, URD or UWR):

    * ACT: bank closed; ``trp`` after its PRE, ``trc`` after its ACT, ``trfc`` after REF;
      ``trrd_s`` after any ACT, ``trrd_l`` after one in its bank group; at most four ACTs
      in any ``tfaw`` window.
    * PRE: bank open; ``tras`` after its ACT, ``trtp`` after its last RD/URD,
      ``tcwl + tbl + twr`` after its last WR/UWR.
    * REF: all banks closed, ``trp`` after every PRE, ``trc`` after every ACT, ``trfc``
      after the previous REF.
    * Row commands: one per cycle (the row command bus).
    * Column commands: bank open at the command's row; ``trcd_rd`` (RD, URD) or ``trcd_wr``
      (WR, UWR) after the ACT; ``tccd_s`` after any column command, ``tccd_l`` after one in
      the bank group; RD ``tcwl + tbl + twtr_s`` (``twtr_l`` in the group) after a WR/UWR;
      WR/UWR ``trtw`` after an RD.
    * Data bus: RD data ``[t + tcl, t + tcl + tbl)`` and WR/UWR data ``[t + tcwl, t + tcwl +
      tbl)`` never overlap.
    * UWR: an URD of the same bank, row and column at least ``tcl + talu`` before it.
    """
    errors = []

    def bad(t, pc, msg):
        if len(errors) < limit:
            errors.append(f"pc {pc} cycle {t}: {msg}")

    per_pc = defaultdict(list)
    for entry in log:
        per_pc[entry[1]].append(entry)
    for pc, cmds in per_pc.items():
        cmds.sort(key=lambda e: e[0])
        nb = p.banks
        never = -(1 << 40)
        open_row = [-1] * nb
        act, pre = [never] * nb, [never] * nb
        rd_b, wr_b = [never] * nb, [never] * nb
        col_bg, act_bg, wr_bg = defaultdict(lambda: never), defaultdict(lambda: never), \
            defaultdict(lambda: never)
        acts, col_any, rd_any, wr_any, ref, row_bus = [], never, never, never, never, never
        urd, data = {}, []
        for t, _, cmd, bg, bank, row, colm in cmds:
            if cmd in _ROW_CMDS:
                if t <= row_bus:
                    bad(t, pc, f"{cmd} on the row bus in the cycle of the previous row command")
                row_bus = t
            if cmd == "ACT":
                if open_row[bank] >= 0:
                    bad(t, pc, f"ACT to open bank {bank}")
                for what, last, need in (("tRP", pre[bank], p.trp), ("tRC", act[bank], p.trc),
                                         ("tRFC", ref, p.trfc), ("tRRD_S", acts[-1] if acts
                                                                 else never, p.trrd_s),
                                         ("tRRD_L", act_bg[bg], p.trrd_l),
                                         ("tFAW", acts[-4] if len(acts) >= 4 else never,
                                          p.tfaw)):
                    if t - last < need:
                        bad(t, pc, f"ACT bank {bank} only {t - last} after {what} ({need})")
                open_row[bank], act[bank], act_bg[bg] = row, t, t
                acts.append(t)
            elif cmd == "PRE":
                if open_row[bank] < 0:
                    bad(t, pc, f"PRE to closed bank {bank}")
                for what, last, need in (("tRAS", act[bank], p.tras),
                                         ("tRTP", rd_b[bank], p.trtp),
                                         ("tWR", wr_b[bank], p.tcwl + p.tbl + p.twr)):
                    if t - last < need:
                        bad(t, pc, f"PRE bank {bank} only {t - last} after {what} ({need})")
                open_row[bank], pre[bank] = -1, t
            elif cmd == "REF":
                if any(r >= 0 for r in open_row):
                    bad(t, pc, "REF with a bank open")
                if t - max(pre) < p.trp or t - max(act) < p.trc or t - ref < p.trfc:
                    bad(t, pc, "REF before tRP/tRC/tRFC")
                ref = t
            else:
                read = cmd in ("RD", "URD")
                if open_row[bank] != row:
                    bad(t, pc, f"{cmd} bank {bank} row {row}, open row {open_row[bank]}")
                rcd = p.trcd_rd if read else p.trcd_wr
                if t - act[bank] < rcd:
                    bad(t, pc, f"{cmd} bank {bank} only {t - act[bank]} after ACT ({rcd})")
                if t - col_any < p.tccd_s:
                    bad(t, pc, f"{cmd} only {t - col_any} after a column command (tCCD_S)")
                if t - col_bg[bg] < p.tccd_l:
                    bad(t, pc, f"{cmd} only {t - col_bg[bg]} after a column command in "
                               f"group {bg} (tCCD_L)")
                if cmd == "RD":
                    if t - wr_any < p.tcwl + p.tbl + p.twtr_s:
                        bad(t, pc, f"RD only {t - wr_any} after a write (tWTR_S)")
                    if t - wr_bg[bg] < p.tcwl + p.tbl + p.twtr_l:
                        bad(t, pc, f"RD only {t - wr_bg[bg]} after a write in group {bg} "
                                   f"(tWTR_L)")
                    data.append((t + p.tcl, t + p.tcl + p.tbl))
                    rd_any = t
                if not read:
                    if t - rd_any < p.trtw:
                        bad(t, pc, f"{cmd} only {t - rd_any} after an RD (tRTW)")
                    data.append((t + p.tcwl, t + p.tcwl + p.tbl))
                    wr_any, wr_bg[bg], wr_b[bank] = t, t, t
                if cmd == "URD":
                    urd[(bank, row, colm)] = t
                if cmd == "UWR":
                    r = urd.pop((bank, row, colm), None)
                    if r is None or t - r < p.tcl + p.talu:
                        bad(t, pc, f"UWR bank {bank} col {colm} without its URD "
                                   f"tCL + tALU before")
                if read:
                    rd_b[bank] = t
                col_any, col_bg[bg] = t, t
        data.sort()
        for (s0, e0), (s1, _) in zip(data, data[1:]):
            if s1 < e0:
                bad(s1, pc, f"data bus: a burst at {s1} overlaps one ending at {e0}")
    return errors


def refresh_times(log):
    """REF cycles per pseudo-channel, sorted."""
    out = defaultdict(list)
    for t, pc, cmd, *_ in log:
        if cmd == "REF":
            out[pc].append(t)
    return {pc: sorted(ts) for pc, ts in out.items()}


def run_stream(params=None, *, pattern="seq", read_frac=1.0, op=MemOp.STORE, nbytes=256,
               cycles=20000, warmup=2000, per_cycle=64, stash=0, seed=1, footprint=1 << 30,
               record=False):
    """Drive an :class:`~sim_models.hbm.HbmModel` closed-loop and measure it.

    Every caller cycle, up to ``per_cycle`` requests of ``nbytes`` are offered; each is a
    read with probability ``read_frac`` (seeded), else ``op``. Addresses are consecutive
    (``pattern="seq"``) or uniform over ``footprint`` bytes, ``nbytes``-aligned
    (``"random"``). With ``stash=0`` a refused request blocks the ones behind it, as
    DRAMsim3's generators do; with ``stash=k`` up to ``k`` refused requests wait aside
    (offered again first every cycle) while new ones go on, as a network with a queue per
    channel would. Bandwidth counts the bytes of requests completed in ``[warmup, cycles)``.

    Returns a dict: ``gbs``, ``efficiency`` (of the pin peak), ``read_latency`` (mean,
    caller cycles, requests submitted after warmup), ``hit_rate``, ``us_per_request``
    (time spent in the model's calls per request accepted; refused offers, a cost of the
    generator's retry policy, are left out),
    ``requests``, and the ``model``.
    """
    p = params if params is not None else HbmParams()
    if not 0 <= warmup < cycles:
        raise ValueError(f"warmup must be in [0, {cycles - 1}], not {warmup!r}")
    m = HbmModel(p, record=record)
    rng = random.Random(seed)
    addr, moved, lat, n_lat, n = 0, 0, 0, 0, 0
    waiting, spent = [], 0.0
    clock = time.perf_counter
    for c in range(cycles):
        offered, kept = 0, []
        for o, a in waiting:
            offered += 1
            t0 = clock()
            if m.submit(c, o, a, nbytes, tag=n):
                spent += clock() - t0
                n += 1
            else:
                kept.append((o, a))
        waiting = kept
        while offered < per_cycle and len(waiting) <= stash:
            o = MemOp.READ if rng.random() < read_frac else op
            if pattern == "seq":
                a, addr = addr, addr + nbytes
            else:
                a = rng.randrange(footprint // nbytes) * nbytes
            offered += 1
            t0 = clock()
            if m.submit(c, o, a, nbytes, tag=n):
                spent += clock() - t0
                n += 1
            else:
                waiting.append((o, a))
        t0 = clock()
        finished = m.advance(c)
        spent += clock() - t0
        for done in finished:
            if done.done >= warmup:
                moved += done.nbytes
                if done.op == MemOp.READ.value and done.submitted >= warmup:
                    lat += done.done - done.submitted
                    n_lat += 1
    gbs = moved / (cycles - warmup) * p.clock_ghz
    st = m.stats
    return {"gbs": gbs, "efficiency": gbs / p.peak_gbs,
            "read_latency": lat / n_lat if n_lat else None,
            "hit_rate": st["row_hits"] / max(1, st["accesses"]),
            "us_per_request": spent / max(1, n) * 1e6, "requests": n, "model": m}


#: DRAMsim3's HBM2 configuration (``configs/HBM2_8Gb_x128.ini`` of umd-memsys/DRAMsim3 at
#: 29817593b3389f1337235d63cac515024ab8fd6e) with one channel, in this model's terms
#: (128-bit legacy channel, BL4: 64 B per 2-cycle burst; its read-to-write turnaround
#: ``RL + burst - WL + tRTRS``; its address map ``rorabgbachco``): the cross-check of
#: ``docs/dram.md``.
DRAMSIM3_HBM2 = dict(channels=1, pseudo_channels=1, burst_bytes=64, interleave_bytes=64,
                     row_bytes=1024, rows=32768, mapping=("co", "ch", "pc", "bg", "ba", "ro"),
                     clock_ghz=1.0, tbl=2, tcl=14, tcwl=4, trcd_rd=14, trcd_wr=14, trp=14,
                     tras=34, trc=48, tccd_s=1, tccd_l=2, trrd_s=4, trrd_l=6, tfaw=30,
                     twtr_s=6, twtr_l=8, trtw=14 + 2 - 4 + 2, trtp=5, twr=16, trfc=260,
                     trefi=3900)


#: DRAMsim3's ``average_bandwidth`` over its 32 GB/s peak in the runs of ``docs/dram.md``
#: (traces from :func:`write_traces`, ``DRAMSIM3_HBM2`` with one channel, 200,000 cycles).
DRAMSIM3_MEASURED = {"sequential read": 29.4256 / 32, "sequential write": 29.4371 / 32,
                     "random read": 7.85472 / 32, "random 2:1 read/write": 7.84032 / 32}

_D3_RUNS = (("sequential read", {}), ("sequential write", {"read_frac": 0.0}),
            ("random read", {"pattern": "random"}),
            ("random 2:1 read/write", {"pattern": "random", "read_frac": 2 / 3}))


def validation_table(quick=False):
    """The rows of the validation table: ``(name, result dict, DRAMsim3 figure or None)``."""
    cyc = 6000 if quick else 20000
    p = HbmParams()
    rnd = {"pattern": "random", "stash": p.n_pcs}
    rows = [
        ("sequential read, 256 B", {}),
        ("sequential write, 256 B", {"read_frac": 0.0}),
        ("sequential update, 256 B", {"read_frac": 0.0, "op": MemOp.UPDATE}),
        ("random read, 256 B", rnd),
        ("random 2:1 read/write, 256 B", {**rnd, "read_frac": 2 / 3}),
        ("random read, 64 B", {**rnd, "nbytes": 64}),
        ("random 2:1 read/write, 64 B", {**rnd, "nbytes": 64, "read_frac": 2 / 3}),
    ]
    out = [(name, run_stream(p, cycles=cyc, **kw), None) for name, kw in rows]
    d3 = p.replace(**DRAMSIM3_HBM2)
    for name, kw in _D3_RUNS:
        out.append((f"DRAMsim3's HBM2, 1 channel: {name}, 64 B",
                    run_stream(d3, nbytes=64, per_cycle=1, cycles=2 * cyc, warmup=cyc // 2,
                               **kw), DRAMSIM3_MEASURED[name]))
    return out


def write_traces(folder, n=400000, seed=1):
    """DRAMsim3 trace files of the cross-check (``<addr> READ|WRITE 0`` lines, 64-B
    aligned, 1 GB): ``seq_read``, ``seq_write``, ``rand_read``, ``rand_mix`` (2:1)."""
    rng = random.Random(seed)
    lines = {"seq_read": (f"0x{64 * i:x} READ 0" for i in range(n)),
             "seq_write": (f"0x{64 * i:x} WRITE 0" for i in range(n)),
             "rand_read": (f"0x{rng.randrange(1 << 24) * 64:x} READ 0" for _ in range(n)),
             "rand_mix": (f"0x{rng.randrange(1 << 24) * 64:x} "
                          f"{'WRITE' if rng.randrange(3) == 0 else 'READ'} 0" for _ in range(n))}
    for name, gen in lines.items():
        with open(f"{folder}/{name}.trc", "w") as f:
            f.writelines(line + "\n" for line in gen)


def main(argv=None):
    """``python -m sim_models.hbm_check [--quick] [--traces DIR]``: print the validation
    table (or write the DRAMsim3 traces)."""
    ap = argparse.ArgumentParser(prog="python -m sim_models.hbm_check",
                                 description="Validation table of the HBM2 timing model.")
    ap.add_argument("--quick", action="store_true", help="shorter runs")
    ap.add_argument("--traces", metavar="DIR",
                    help="write the DRAMsim3 cross-check traces into DIR and stop")
    args = ap.parse_args(argv)
    if args.traces:
        write_traces(args.traces)
        return
    print("| workload | GB/s | of peak | DRAMsim3 | mean read latency (GPU cycles) | "
          "row hits | us/request |")
    print("|---|---|---|---|---|---|---|")
    for name, r, ref in validation_table(args.quick):
        lat = f"{r['read_latency']:.0f}" if r["read_latency"] is not None else "-"
        d3 = f"{100 * ref:.1f}%" if ref is not None else ""
        print(f"| {name} | {r['gbs']:.1f} | {100 * r['efficiency']:.1f}% | {d3} | {lat} | "
              f"{100 * r['hit_rate']:.0f}% | {r['us_per_request']:.1f} |")


if __name__ == "__main__":
    main()
