# SPDX-License-Identifier: Apache-2.0
"""Simulation-only HDL of one pseudo-channel (PC) of :class:`sim_models.hbm.HbmModel`, for
:class:`t3hw.verif.simhdl.hbm.HbmDramHdl`: its read and write queues, its FR-FCFS scheduler,
its banks and timings, its refresh and its completions, cycle by cycle.

The caller's cycle is the DRAM clock (``HbmParams.ratio`` 1). ``HbmModel`` is event-driven:
a PC decides at the earliest time a command can issue, ``now`` being its last decision or
arrival. Every candidate's time there is ``max(X, now)``, ``X`` a function of the state, so
the decision made at ``now`` is the one made at any later cycle up to its own time while the
state does not change; this HDL therefore decides at every cycle ``T`` (``cycle``), from the
state left by cycle ``T - 1`` and the access arriving at ``T`` (``ins``), which commands
issue exactly at ``T``:

* at ``T == ref_due`` (or later, should ``cycle`` ever skip it) the refresh and nothing
  else: every open bank precharged in bank order (each at ``max(T, its tRAS/tRTP/tWR limit,
  the row bus)``), then REFab after the last tRP, ``tRFC`` with no activation;
* else at most one column access and then at most one row command (the model's decision loop
  at one time): the access when ``T`` is a column slot of a free lane and some bank of the
  served queue offers a row hit whose limits (``tCCD_L``, tRCD, tWTR_S/L, tRTW, the update's
  ``tcl + talu`` offset) are all ``<= T``, the oldest such; the row command (ACT or PRE for
  the oldest access of its bank, tRP, tRC, tRRD_S/L, tFAW, tRAS, one per cycle on the row
  bus) from the queue served *after* that access left it (the write drain may switch), the
  oldest ready one.

Each queue is kept in age order (index 0 oldest; an access leaving closes the gap), so
"oldest" is the lowest set bit of a mask: per queue and bank a mask of its accesses
(``bm``) and of those to the bank's open row (``hm``, rebuilt when the bank is activated),
a mask of the updates, and the accesses' fields packed in one word. A column access
completes ``tcl + tbl`` (read) or ``tcwl + tbl`` (write) after its last burst; it is put on
a calendar at that cycle and shown on ``cpl_*`` then.

Never synthesised: wide words, variable shifts and wide compares are used freely.
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .dram import CYCLE_WIDTH


__all__ = ["PcSched", "entry_layout", "max_bursts", "update_steps"]


def max_bursts(hp):
    """Most bursts of one access: ``interleave_bytes / burst_bytes``."""
    return hp.interleave_bytes // hp.burst_bytes


def update_steps(hp):
    """Lane steps from an update's first URD to its first UWR when the access has at most
    :func:`max_bursts` bursts: ``ceil((tcl + talu) / (lanes * slot))``."""
    return -(-(hp.tcl + hp.talu) // (hp.slot * hp.lanes))


def entry_layout(hp, meta_width):
    """One queued access: its row, bank, bursts, and ``meta`` (what its completion says)."""
    return data.StructLayout({"row": max(1, (hp.rows - 1).bit_length()),
                              "bank": max(1, (hp.banks - 1).bit_length()),
                              "n": max_bursts(hp).bit_length(), "meta": meta_width})


def _index(onehot):
    """The index of the set bit of one-hot ``onehot``."""
    bits = max(1, (len(onehot) - 1).bit_length())
    masks = [sum(1 << i for i in range(len(onehot)) if i >> j & 1) for j in range(bits)]
    return Cat(*[(onehot & mk).any() for mk in masks])


def _collapse(v, low, w):
    """``v`` (entries of ``w`` bits) with the entry above mask ``low`` removed: the entries
    above it move down by one."""
    return (v & low) | ((v >> w) & ~low)


def _drain(d, c0, c1, hp):
    """The write-drain state after :meth:`HbmModel._pc_run`'s test, from state ``d`` and the
    read and write counts ``c0``, ``c1``."""
    off = (c1 == 0) | ((c1 <= hp.write_low) & (c0 != 0))
    on = (c1 >= hp.write_high) | ((c1 != 0) & (c0 == 0))
    return Mux(d, ~off, on)


class _Stage(Elaboratable):
    """Combinational logic in a fragment of its own. ``amaranth.sim`` reruns a fragment
    whenever a signal it reads changes, so a chain of signals inside one fragment reruns all of
    it once per link; the scheduler's chain is cut into stages, each of which runs about once
    per settling (this changes nothing but simulation speed)."""

    def __init__(self):
        self.m = Module()

    def elaborate(self, platform):
        return self.m


class PcSched(wiring.Component):
    """One pseudo-channel of :class:`~sim_models.hbm.HbmModel` at ratio 1 (module docstring).

    Parameters
    ----------
    hp : HbmParams
        The memory system (validated by :class:`~t3hw.verif.simhdl.hbm.HbmDramHdl`).
    index : int
        This PC's index (``channel * pseudo_channels + pseudo_channel``): its first refresh
        is at ``trefi * (index + 1) // n_pcs``.
    meta_width : int
        Width of the ``meta`` field carried from arrival to completion.

    Members
    -------
    cycle : In(40)
        The cycle ``T``.
    ins_valid, ins_write, ins_update, ins : In(1), In(1), In(1), In(entry_layout)
        An access arriving at ``T`` (the caller checks :attr:`count_r` / :attr:`count_w`
        first), to the write queue if ``ins_write`` (an UPDATE if ``ins_update``).
    count_r, count_w : Out
        Accesses waiting in the read and write queues (registers: after the decisions of
        ``T - 1``).
    cpl_valid, cpl_read, cpl_meta : Out(1), Out(1), Out(meta_width)
        An access completing at ``T`` (from registers, a memory and ``cycle``).
    collision : Out(1)
        A completion found its calendar slot taken (never expected: the data bus of a PC
        carries one burst at a time).
    col_valid, row_valid, refresh : Out(1)
        A column access, a row command, the refresh decided at ``T`` (for tests).
    col_bank, row_bank, row_act : Out
        Their banks, and whether the row command is an ACT (else a PRE).
    """

    def __init__(self, hp, index, meta_width):
        self.hp, self.index = hp, index
        self.caps = (hp.read_queue, hp.write_queue)
        self.cap = max(self.caps)
        self.entry = entry_layout(hp, meta_width)
        self.ew = self.entry.size
        self.step = hp.slot * hp.lanes
        self.upd_cycles = update_steps(hp) * self.step
        n = max_bursts(hp)
        longest = max((n - 1) * self.step + hp.tcl + hp.tbl,
                      self.upd_cycles + (n - 1) * self.step + hp.tcwl + hp.tbl)
        self.cal_depth = 1 << longest.bit_length()
        bank = self.entry.members["bank"]
        super().__init__({
            "cycle":      In(CYCLE_WIDTH),
            "ins_valid":  In(1), "ins_write": In(1), "ins_update": In(1),
            "ins":        In(self.entry),
            "count_r":    Out(range(hp.read_queue + 1)),
            "count_w":    Out(range(hp.write_queue + 1)),
            "cpl_valid":  Out(1), "cpl_read": Out(1), "cpl_meta": Out(meta_width),
            "collision":  Out(1),
            "col_valid":  Out(1), "row_valid": Out(1), "refresh": Out(1),
            "col_bank":   Out(bank), "row_bank": Out(bank), "row_act": Out(1),
        })

    def _state(self):
        hp, nb = self.hp, self.hp.banks

        def t(name, n=None, init=0):
            if n is None:
                return Signal(CYCLE_WIDTH, name=name, init=init)
            return [Signal(CYCLE_WIDTH, name=f"{name}{i}", init=init) for i in range(n)]

        s = {
            "open": [Signal(name=f"open{b}") for b in range(nb)],
            "orow": [Signal(self.entry.members["row"], name=f"orow{b}") for b in range(nb)],
            "hits": [Signal(range(hp.row_hit_cap + 1), name=f"hits{b}") for b in range(nb)],
            "act_ok": t("act_ok", nb), "pre_ok": t("pre_ok", nb), "rd_ok": t("rd_ok", nb),
            "wr_ok": t("wr_ok", nb), "bg_col": t("bg_col", hp.bank_groups),
            "bg_act": t("bg_act", hp.bank_groups), "bg_wr": t("bg_wrok", hp.bank_groups),
            "lane": t("lane", hp.lanes), "wtr": t("wtr_ok"), "rtw": t("rtw_ok"),
            "act_any": t("act_any"), "faw": t("faw", 4), "row_bus": t("row_bus"),
            "ref_due": t("ref_due", init=hp.trefi * (self.index + 1) // hp.n_pcs),
            "drain": Signal(name="draining"), "cnt": [self.count_r, self.count_w],
            "um": Signal(self.caps[1], name="um"),
            "word": [Signal(c * self.ew, name=f"word{q}") for q, c in enumerate(self.caps)],
        }
        for k in ("bm", "hm"):
            s[k] = [[Signal(c, name=f"{k}{q}_{b}") for b in range(nb)]
                    for q, c in enumerate(self.caps)]
        return s

    def _stage(self, m, name):
        st = _Stage()
        m.submodules[name] = st
        return st.m

    def elaborate(self, platform):
        m = Module()
        hp = self.hp
        s = self._s = self._state()
        lim = self._limits(m)
        eff = self._arrive(m, lim)
        drain0 = Signal()
        self._stage(m, "drain0").d.comb += drain0.eq(_drain(s["drain"], *eff["cnt"], hp))
        col = self._column(m, eff, drain0, lim)
        cnt1 = [Signal(range(c + 1), name=f"cnt1_{q}") for q, c in enumerate(self.caps)]
        drain1 = Signal()
        st = self._stage(m, "cnt1")
        st.d.comb += [cnt1[q].eq(eff["cnt"][q] - (col["fire"] & (drain0 == q))) for q in (0, 1)]
        self._stage(m, "drain1").d.comb += drain1.eq(_drain(drain0, *cnt1, hp))
        row = self._row(m, eff, drain1, col, lim)
        m.d.sync += [s["drain"].eq(drain1), s["cnt"][0].eq(cnt1[0]), s["cnt"][1].eq(cnt1[1])]
        self._queues(m, eff, drain0, col, row)
        self._col_timing(m, col)
        self._row_timing(m, row)
        self._refresh(m, lim["ref"])
        self._calendar(m, col)
        return m

    # -- each limit against T; the arrival ----------------------------------------------------
    def _limits(self, m):
        hp, s, T = self.hp, self._s, self.cycle
        st = self._stage(m, "limits")
        lim = {}
        for k in ("act_ok", "pre_ok", "rd_ok", "wr_ok", "bg_col", "bg_act", "bg_wr"):
            lim[k] = [Signal(name=f"{k}_le{i}") for i in range(len(s[k]))]
            st.d.comb += [o.eq(v <= T) for o, v in zip(lim[k], s[k])]
        lim["wr_upd"] = [Signal(name=f"wr_upd{b}") for b in range(hp.banks)]
        st.d.comb += [o.eq(v <= T + self.upd_cycles) for o, v in zip(lim["wr_upd"], s["wr_ok"])]
        for k in ("ref", "slot", "wtr", "rtw", "rtw_upd", "bus", "act", "ins_hit"):
            lim[k] = Signal(name=f"lim_{k}")
        ref = T >= s["ref_due"]             # == while cycle counts the clocks
        ins = self.ins
        st.d.comb += [
            lim["ref"].eq(ref), self.refresh.eq(ref),
            lim["slot"].eq((T % hp.slot == 0) & ~ref &
                           (Array(s["lane"])[(T // hp.slot) % hp.lanes] <= T)),
            lim["wtr"].eq(s["wtr"] <= T), lim["rtw"].eq(s["rtw"] <= T),
            lim["rtw_upd"].eq(s["rtw"] <= T + self.upd_cycles),
            lim["bus"].eq((s["row_bus"] <= T) & ~ref),
            lim["act"].eq((s["act_any"] <= T) & (s["faw"][0] <= T)),
            lim["ins_hit"].eq(Array(s["open"])[ins.bank] &
                              (Array(s["orow"])[ins.bank] == ins.row)),
        ]
        lim["ins_bit"] = []
        for q, cap in enumerate(self.caps):
            bit = Signal(cap, name=f"ins_bit{q}")
            go = self.ins_valid & (self.ins_write == q)
            st.d.comb += bit.eq(Mux(go, Const(1, cap) << s["cnt"][q], 0))
            lim["ins_bit"].append(bit)
        return lim

    def _arrive(self, m, lim):
        """The queues as they stand at ``T``, the arrival included."""
        s, nb, ins = self._s, self.hp.banks, self.ins
        st = self._stage(m, "arrive")
        eff = {"cnt": [], "bm": [], "hm": [], "word": []}
        for q, cap in enumerate(self.caps):
            bit = lim["ins_bit"][q]
            cnt = Signal(range(cap + 1), name=f"ecnt{q}")
            word = Signal(cap * self.ew, name=f"eword{q}")
            st.d.comb += [cnt.eq(s["cnt"][q] + bit.any()),
                          word.eq(s["word"][q] |
                                  Mux(bit.any(), ins.as_value() << (s["cnt"][q] * self.ew), 0))]
            bms, hms = [], []
            for b in range(nb):
                here = ins.bank == b
                bm, hm = Signal(cap, name=f"ebm{q}_{b}"), Signal(cap, name=f"ehm{q}_{b}")
                st.d.comb += [bm.eq(s["bm"][q][b] | Mux(here, bit, 0)),
                              hm.eq(s["hm"][q][b] | Mux(here & lim["ins_hit"], bit, 0))]
                bms.append(bm)
                hms.append(hm)
            for k, v in (("cnt", cnt), ("bm", bms), ("hm", hms), ("word", word)):
                eff[k].append(v)
        eff["um"] = Signal(self.caps[1], name="eum")
        st.d.comb += eff["um"].eq(s["um"] | Mux(self.ins_update, lim["ins_bit"][1], 0))
        return eff

    def _view(self, m, eff, q, name):
        """The masks and word of queue ``q`` (a signal: 0 reads, 1 writes)."""
        st = self._stage(m, f"{name}view")
        out = {}
        for k in ("bm", "hm"):
            out[k] = [Signal(self.cap, name=f"{name}_{k}{b}") for b in range(self.hp.banks)]
            st.d.comb += [v.eq(Mux(q, e1, e0)) for v, e0, e1 in zip(out[k], *eff[k])]
        out["word"] = Signal(self.cap * self.ew, name=f"{name}_word")
        st.d.comb += out["word"].eq(Mux(q, eff["word"][1], eff["word"][0]))
        return out

    def _oldest(self, m, name, cands, extra=()):
        """The oldest of the candidate bits ``cands`` (one per bank), over three stages:
        ``(fire, bit, index)``; ``fire`` also needs every signal of ``extra``."""
        cand = Signal(self.cap, name=f"{name}_cands")
        self._stage(m, f"{name}cand").d.comb += cand.eq(_or(cands, self.cap))
        bit, fire = Signal(self.cap, name=f"{name}_bit"), Signal(name=f"{name}_fire")
        self._stage(m, f"{name}pick").d.comb += [bit.eq(cand & (~cand + 1)),
                                                 fire.eq(Cat(cand.any(), *extra).all())]
        idx = Signal(range(self.cap), name=f"{name}_idx")
        self._stage(m, f"{name}idx").d.comb += idx.eq(_index(bit))
        return fire, bit, idx

    def _entry(self, m, name, word, idx):
        e = Signal(self.entry, name=f"{name}_entry")
        self._stage(m, f"{name}entry").d.comb += e.eq(word.bit_select(idx * self.ew, self.ew))
        return e

    # -- the column access at T ---------------------------------------------------------------
    def _column(self, m, eff, drain0, lim):
        hp, s = self.hp, self._s
        v = self._view(m, eff, drain0, "c")
        st = self._stage(m, "cbank")
        cands = []
        for b in range(hp.banks):
            g = b // hp.banks_per_group
            bm, hm = v["bm"][b], v["hm"][b]
            hitbit, go = Signal(self.cap, name=f"hitbit{b}"), Signal(name=f"col_ok{b}")
            capped = (s["hits"][b] >= hp.row_hit_cap) & (bm & ~hm).any()
            upd = (hm & (~hm + 1) & eff["um"]).any()
            rd = lim["bg_col"][g] & lim["rd_ok"][b] & lim["wtr"] & lim["bg_wr"][g]
            wr = lim["bg_col"][g] & lim["wr_ok"][b] & lim["rtw"]
            up = lim["bg_col"][g] & lim["rd_ok"][b] & lim["wr_upd"][b] & lim["rtw_upd"]
            st.d.comb += [hitbit.eq(hm & (~hm + 1)),
                          go.eq(s["open"][b] & hm.any() & ~capped &
                                Mux(drain0, Mux(upd, up, wr), rd))]
            cands.append(Mux(go, hitbit, 0))
        fire, bit, idx = self._oldest(m, "c", cands, [lim["slot"]])
        upd = Signal(name="col_upd")
        self._stage(m, "cupd").d.comb += [upd.eq(drain0 & (bit & eff["um"]).any()),
                                          self.col_valid.eq(fire)]
        e = self._entry(m, "c", v["word"], idx)
        last = Signal(CYCLE_WIDTH, name="col_last")
        self._stage(m, "clast").d.comb += [
            self.col_bank.eq(e.bank),
            last.eq(self.cycle + (e.n - 1) * self.step + Mux(upd, self.upd_cycles, 0))]
        return {"fire": fire, "idx": idx, "e": e, "upd": upd, "write": drain0, "last": last,
                "lane": (self.cycle // hp.slot) % hp.lanes}

    # -- the row command at T -----------------------------------------------------------------
    def _row(self, m, eff, drain1, col, lim):
        hp, s = self.hp, self._s
        v = self._view(m, eff, drain1, "r")
        st = self._stage(m, "rbank")
        cands = []
        for b in range(hp.banks):
            g = b // hp.banks_per_group
            bm, hm = v["bm"][b], v["hm"][b]
            head, go = Signal(self.cap, name=f"head{b}"), Signal(name=f"row_ok{b}")
            pre = s["open"][b] & (~hm.any() | ((s["hits"][b] >= hp.row_hit_cap) &
                                               (bm & ~hm).any()))
            act = ~s["open"][b] & lim["act_ok"][b] & lim["bg_act"][g] & lim["act"]
            st.d.comb += [head.eq(bm & (~bm + 1)),
                          go.eq(bm.any() & ~(col["fire"] & (col["e"].bank == b)) &
                                (act | (pre & lim["pre_ok"][b])))]
            cands.append(Mux(go, head, 0))
        fire, _, idx = self._oldest(m, "r", cands, [lim["bus"]])
        e = self._entry(m, "r", v["word"], idx)
        is_act = Signal(name="row_act")
        self._stage(m, "ract").d.comb += [
            is_act.eq(~Array(s["open"])[e.bank]), self.row_valid.eq(fire),
            self.row_bank.eq(e.bank), self.row_act.eq(is_act)]
        return {"fire": fire, "e": e, "act": is_act}

    # -- next state ---------------------------------------------------------------------------
    def _queues(self, m, eff, drain0, col, row):
        """The accesses: the arrival stays, the column access leaves (its gap closes); an
        activated bank's open-row mask is rebuilt from its accesses' rows."""
        s, nb, ew = self._s, self.hp.banks, self.ew
        e = row["e"]
        act = Signal(nb, name="act_bank")
        st = self._stage(m, "rebuild")
        st.d.comb += act.eq(Mux(row["fire"] & row["act"], Const(1, nb) << e.bank, 0))
        rebuilt = [Signal(c, name=f"rebuilt{q}") for q, c in enumerate(self.caps)]
        with st.If(act.any()):
            for q, cap in enumerate(self.caps):
                rows = [eff["word"][q][i * ew:i * ew + len(e.row)] for i in range(cap)]
                st.d.comb += rebuilt[q].eq(Cat(*[r == e.row for r in rows]) &
                                           Array(eff["bm"][q])[e.bank])
        st, st2 = self._stage(m, "qlow"), self._stage(m, "qword")
        for q, cap in enumerate(self.caps):
            gone = Signal(name=f"gone{q}")
            low = Signal(cap, name=f"low{q}")
            loww = Signal(cap * ew, name=f"loww{q}")
            w = Signal(cap * ew, name=f"nword{q}")
            st.d.comb += [gone.eq(col["fire"] & (drain0 == q)),
                          low.eq((Const(1, cap + 1) << col["idx"]) - 1),
                          loww.eq((Const(1, cap * ew + 1) << (col["idx"] * ew)) - 1)]
            st2.d.comb += w.eq(Mux(gone, _collapse(eff["word"][q], loww, ew), eff["word"][q]))
            m.d.sync += s["word"][q].eq(w)
            regs = [(s["bm"][q][b], eff["bm"][q][b]) for b in range(nb)] + \
                   [(s["hm"][q][b], Mux(act[b], rebuilt[q], eff["hm"][q][b])) for b in range(nb)]
            if q == 1:
                regs.append((s["um"], eff["um"]))
            with m.If(gone):
                m.d.sync += [r.eq(_collapse(v, low, 1)) for r, v in regs]
            with m.Else():
                m.d.sync += [r.eq(v) for r, v in regs]

    def _times(self, m, name, exprs):
        """Time signals of ``exprs`` (``{key: value}``), computed once in a stage."""
        st, out = self._stage(m, name), {}
        for k, v in exprs.items():
            out[k] = Signal(CYCLE_WIDTH, name=f"{name}_{k}")
            st.d.comb += out[k].eq(v)
        return out

    def _col_timing(self, m, col):
        hp, s = self.hp, self._s
        e, last, w = col["e"], col["last"], col["write"]
        t = self._times(m, "ct", {
            "lane": last + self.step, "col": last + hp.tccd_l,
            "bg_wr": last + hp.tcwl + hp.tbl + hp.twtr_l,
            "pre": Mux(w, last + hp.tcwl + hp.tbl + hp.twr, last + hp.trtp),
            "wtr": last + hp.tcwl + hp.tbl + hp.twtr_s, "rtw": last + hp.trtw})
        g = e.bank // hp.banks_per_group
        with m.If(col["fire"]):
            with m.Switch(col["lane"]):
                for k in range(hp.lanes):
                    with m.Case(k):
                        m.d.sync += s["lane"][k].eq(t["lane"])
            with m.Switch(g):
                for i in range(hp.bank_groups):
                    with m.Case(i):
                        m.d.sync += s["bg_col"][i].eq(t["col"])
                        with m.If(w):
                            m.d.sync += s["bg_wr"][i].eq(_max(t["bg_wr"], s["bg_wr"][i]))
            with m.Switch(e.bank):
                for b in range(hp.banks):
                    with m.Case(b):
                        m.d.sync += [
                            s["pre_ok"][b].eq(_max(t["pre"], s["pre_ok"][b])),
                            s["hits"][b].eq(Mux(s["hits"][b] == hp.row_hit_cap,
                                                hp.row_hit_cap, s["hits"][b] + 1))]
            with m.If(w):
                m.d.sync += s["wtr"].eq(_max(t["wtr"], s["wtr"]))
            with m.Else():
                m.d.sync += s["rtw"].eq(_max(t["rtw"], s["rtw"]))

    def _row_timing(self, m, row):
        hp, s, T = self.hp, self._s, self.cycle
        e = row["e"]
        t = self._times(m, "rt", {k: T + getattr(hp, k) for k in (
            "trrd_s", "trrd_l", "tfaw", "tras", "trc", "trcd_rd", "trcd_wr", "trp")})
        g = e.bank // hp.banks_per_group
        with m.If(row["fire"]):
            m.d.sync += s["row_bus"].eq(T + 1)
            with m.If(row["act"]):
                m.d.sync += [s["act_any"].eq(t["trrd_s"]),
                             s["faw"][0].eq(s["faw"][1]), s["faw"][1].eq(s["faw"][2]),
                             s["faw"][2].eq(s["faw"][3]), s["faw"][3].eq(t["tfaw"])]
                with m.Switch(g):
                    for i in range(hp.bank_groups):
                        with m.Case(i):
                            m.d.sync += s["bg_act"][i].eq(t["trrd_l"])
            with m.Switch(e.bank):
                for b in range(hp.banks):
                    with m.Case(b):
                        with m.If(row["act"]):
                            m.d.sync += [
                                s["open"][b].eq(1), s["orow"][b].eq(e.row), s["hits"][b].eq(0),
                                s["pre_ok"][b].eq(_max(t["tras"], s["pre_ok"][b])),
                                s["act_ok"][b].eq(t["trc"]), s["rd_ok"][b].eq(t["trcd_rd"]),
                                s["wr_ok"][b].eq(t["trcd_wr"])]
                        with m.Else():
                            m.d.sync += [s["open"][b].eq(0),
                                         s["act_ok"][b].eq(_max(t["trp"], s["act_ok"][b]))]

    def _refresh(self, m, ref_now):
        """At ``ref_due``: precharge the open banks in bank order, REFab, ``tRFC`` (computed
        only then, in a stage of its own)."""
        hp, s, T = self.hp, self._s, self.cycle
        st = self._stage(m, "refresh")
        bus, aoks = s["row_bus"], []
        ref = Signal(CYCLE_WIDTH, name="ref_time")
        rfc = Signal(CYCLE_WIDTH, name="ref_rfc")
        with st.If(ref_now):
            for b in range(hp.banks):
                pre = Signal(CYCLE_WIDTH, name=f"ref_pre{b}")
                nbus = Signal(CYCLE_WIDTH, name=f"ref_bus{b}")
                aok = Signal(CYCLE_WIDTH, name=f"ref_aok{b}")
                st.d.comb += [pre.eq(_max(_max(T, s["pre_ok"][b]), bus)),
                              nbus.eq(Mux(s["open"][b], pre + 1, bus)),
                              aok.eq(Mux(s["open"][b], _max(pre + hp.trp, s["act_ok"][b]),
                                         s["act_ok"][b]))]
                bus = nbus
                aoks.append(aok)
            acc = _max(T, bus)
            for i, a in enumerate(aoks):
                nxt = Signal(CYCLE_WIDTH, name=f"ref_max{i}")
                st.d.comb += nxt.eq(_max(acc, a))
                acc = nxt
            st.d.comb += [ref.eq(acc), rfc.eq(acc + hp.trfc)]
        with m.If(ref_now):
            m.d.sync += [s["row_bus"].eq(ref + 1), s["ref_due"].eq(s["ref_due"] + hp.trefi)]
            m.d.sync += [o.eq(0) for o in s["open"]]
            m.d.sync += [a.eq(rfc) for a in s["act_ok"]]

    def _calendar(self, m, col):
        """Completions: written at the issue for the cycle they are due, read at that
        cycle."""
        hp, T, d = self.hp, self.cycle, self.cal_depth
        lay = data.StructLayout({"valid": 1, "stamp": CYCLE_WIDTH, "read": 1,
                                 "meta": len(self.cpl_meta)})
        cal = m.submodules.calendar = Memory(shape=lay, depth=d, init=[])   # valid = 0
        wp, rp, cp = cal.write_port(), cal.read_port(domain="comb"), cal.read_port(domain="comb")
        done = Signal(CYCLE_WIDTH, name="col_done")
        read = ~col["write"]
        self._stage(m, "done").d.comb += done.eq(
            col["last"] + Mux(read, hp.tcl + hp.tbl, hp.tcwl + hp.tbl))
        m.d.comb += [
            wp.addr.eq(done % d), wp.en.eq(col["fire"]),
            wp.data.valid.eq(1), wp.data.stamp.eq(done), wp.data.read.eq(read),
            wp.data.meta.eq(col["e"].meta),
            cp.addr.eq(done % d),
            self.collision.eq(col["fire"] & cp.data.valid & (cp.data.stamp > T)),
            rp.addr.eq(T % d),
            self.cpl_valid.eq(rp.data.valid & (rp.data.stamp == T)),
            self.cpl_read.eq(rp.data.read), self.cpl_meta.eq(rp.data.meta),
        ]


def _max(a, b):
    return Mux(a > b, a, b)


def _or(values, width):
    """The OR of ``values``, ``width`` bits."""
    out = Const(0, width)
    for v in values:
        out = out | v
    return out
