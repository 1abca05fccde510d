# SPDX-License-Identifier: Apache-2.0
"""Simulation-only HDL of one GPU's compute units at an engine's ports, for the fast
co-simulation: :class:`sim_models.gpu.GpuCores` as :class:`sim_models.cosim.SystemEnv` drives
it, cycle for cycle.

The HDL depends on the hardware only (the engine's parameters, the units, the burst, the
tags, the write buffer): the scenario stays in Python, so that one build runs them all. What
stays in Python is the order of the tiles and the L2 model
(:class:`~sim_models.gpu.GemmProducer`), woken at tile events only: in a cycle in which
compute units retire or take a tile, :class:`GpuHdl` shows which (``retire``, ``dispatch``)
and the testbench answers, before the cycle ends, with each dispatched unit's tile (``desc``:
its number of loads, its first load's address and its :func:`store_descriptors` entry). The
rest is here:

Cycle ``c`` of the co-simulation (``cycle``), as ``SystemEnv`` runs ``GpuCores``:

* ``store`` offers the next burst of the write buffer (a FIFO of the store descriptors of the
  retired tiles, expanded burst by burst as :func:`descriptor_bursts`), held until taken.
* ``load`` offers, when no load is offered already, a load of the first compute unit with
  loads left, round-robin from the one after the last to issue, tagged with the head of the
  free-tag FIFO (if any tag is free); an offered load is held until taken. A taken load
  pops its tag, moves its unit's address on by ``burst_bytes`` and counts one outstanding.
* ``load_response`` is always ready; a response returns its tag to the tail of the free-tag
  FIFO; a unit whose loads are all issued and back is due at ``max(start + compute, c + 1)``.
  A response may come in the very cycle its load is taken (the Python model issues before
  it returns). A response whose tag has no load outstanding, which the Python model raises
  on, is ignored and sets the sticky :data:`ERR_TAG`.
* At the end of the cycle the units due at or before ``c`` retire (their store descriptors
  enter the write buffer in unit order), then every free unit, in unit order, takes a tile
  while fewer than ``tiles`` are dispatched (start ``c``; with no load to issue it is due at
  ``c + compute``).

Every output is a function of registers, ``run`` and ``cycle`` only: no path from ``desc``,
``tiles``, ``compute``, ``load.ready``, ``load_response`` or ``store.ready`` reaches an output
combinationally, so the testbench reads them at once and the engine's inputs come from
flip-flops (``tiles`` is sampled at every clock edge: it must be set an edge before ``run``
rises). The module is never synthesised: it divides, multiplies and compares 40-bit cycle
numbers freely.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from t3hw.spec.layouts import WriteKind, load_layout, load_response_layout, store_layout
from t3hw.spec.params import EngineParams


__all__ = ["GpuHdl", "desc_layout", "store_descriptors", "descriptor_bursts", "CYCLE_WIDTH",
           "LOADS_WIDTH", "MAX_LOADS", "ERR_TAG", "ERR_OVERFLOW", "ERR_LOADS"]

#: Width of the co-simulation's cycle number in the simulation-only HDL.
CYCLE_WIDTH = 40
#: Width of the ``loads`` field of a unit's ``desc`` entry (what the testbench writes).
LOADS_WIDTH = 32
#: Default largest number of loads of one tile (``max_loads``): 16 Mi bursts, 1 GiB of
#: panel reads at 64-byte bursts.
MAX_LOADS = (1 << 24) - 1
#: ``error`` bits: a load response whose tag has no load outstanding (ignored).
ERR_TAG = 1
#: ``error`` bits: a retired tile found the write buffer full (its stores are lost).
ERR_OVERFLOW = 2
#: ``error`` bits: a dispatched unit was given more than ``max_loads`` loads (clamped).
ERR_LOADS = 4

#: The fields of a :func:`store_descriptors` entry, in its order.
_STORE_FIELDS = ("addr0", "rows", "row_bytes", "pitch", "tid")


def _store_fields(params):
    return {"addr0": params.addr_width, "rows": 16, "row_bytes": 16, "pitch": 32,
            "tid": params.tile_width}


def desc_layout(params):
    """One unit's entry of :class:`GpuHdl`'s ``desc``: the tile it takes, as the testbench
    writes it.

    ``loads`` is the tile's number of loads (``ceil(read bytes / burst_bytes)``), ``load_addr``
    its first load's address (the next ones go up by ``burst_bytes``), and ``addr0``, ``rows``,
    ``row_bytes``, ``pitch``, ``tid`` its :func:`store_descriptors` entry.
    """
    return data.StructLayout({"loads": LOADS_WIDTH, "load_addr": params.addr_width,
                              **_store_fields(params)})


def _check(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], not {value!r}")


def store_descriptors(plan, i):
    """Per tile of GPU ``i`` (by tile id), its stores as ``(addr0, rows, row_bytes, pitch,
    tid)``.

    Expanded by :func:`descriptor_bursts` with the plan's ``burst_bytes`` they are exactly
    the ``(addr, tile id, data.nbytes)`` of :meth:`sim_models.collective.Plan.tile_stores`
    ``(i, t)``: ``rows`` rows of ``row_bytes`` bytes, ``pitch`` bytes apart, cut into bursts.

    Parameters
    ----------
    plan : Plan
        The scenario's plan (:class:`sim_models.collective.Plan`).
    i : int
        The GPU, in ``[0, plan.n - 1]``.

    Raises
    ------
    ValueError
        If ``i`` is out of range, or ``burst_bytes`` is not a multiple of the element size
        (the plan's bursts would then not be ``burst_bytes`` long).
    """
    _check("i", i, 0, plan.n - 1)
    prod, g, burst = plan.producers[i], plan.cfg.gpu, plan.p.burst_bytes
    if burst % g.elem_bytes:
        raise ValueError(f"burst_bytes must be a multiple of elem_bytes={g.elem_bytes}, "
                         f"not {burst!r}")
    out = []
    for t, tile in enumerate(prod.tiles):
        c, u = plan.chunk_of_tile(t), plan.unit_of_tile(t)
        addr0 = (plan.buffer(i, c) + tile.row * g.tile_m * plan.pitch
                 + tile.col * g.tile_n * g.elem_bytes)
        out.append((addr0, tile.rows, tile.cols * g.elem_bytes, plan.pitch, plan.ids.rs(c, u)))
    return out


def descriptor_bursts(desc, burst):
    """The ``(addr, tid, bytes)`` bursts of one :func:`store_descriptors` entry, in order."""
    addr0, rows, row_bytes, pitch, tid = desc
    return [(addr0 + r * pitch + off, tid, min(burst, row_bytes - off))
            for r in range(rows) for off in range(0, row_bytes, burst)]


class GpuHdl(wiring.Component):
    """The compute units of one GPU, as :class:`sim_models.gpu.GpuCores` (module docstring).

    Parameters
    ----------
    params : EngineParams
        The engine's parameters (the ``load``, ``load_response`` and ``store`` layouts).
    cus : int
        Compute units, in [1, 256].
    burst_bytes : int
        Bytes per load and per full store burst, in [1, ``params.burst_bytes``].
    tag_width : int
        ``2**tag_width`` loads may be outstanding; in [1, ``params.load_tag_width``].
    wb_depth : int
        Tiles the write buffer holds (the head one included), in [1, 65536].
    max_loads : int
        Most loads one tile may have, in [1, ``2**LOADS_WIDTH - 1``].

    Members
    -------
    run : In(1)
        No unit retires or takes a tile before it is high.
    cycle : In(40)
        The co-simulation's cycle number (0: the first cycle with ``run`` high).
    tiles : In(32)
        The tiles this GPU dispatches in all; constant during the run, sampled at every clock
        edge (set it at least one edge before ``run`` rises).
    compute : In(32)
        Cycles of every tile's compute; constant during the run, sampled at a dispatch.
    load : Out(stream.Signature(load_layout))
        To the engine's ``load``: ``addr``, ``bytes`` (``burst_bytes``), ``tag``.
    load_response : In(stream.Signature(load_response_layout))
        From the engine's ``load_response``; ``ready`` is always 1.
    store : Out(stream.Signature(store_layout))
        To the engine's ``store``: ``addr``, ``tile``, ``bytes``, ``kind`` (``UPDATE``).
    retire, dispatch : Out(cus), Out(cus)
        The units that retire a tile this cycle, and those that take one (a unit may do
        both).
    desc : In(ArrayLayout(desc_layout(params), cus))
        The tile each unit dispatched this cycle takes (:func:`desc_layout`), written during
        the cycle and sampled at the clock edge that ends it; ignored for the others.
    dispatched : Out(32)
        Tiles dispatched so far.
    event, stamp : Out(1), Out(40)
        ``run`` and some unit retires or takes a tile; ``cycle + 1`` then, else 0.
    tiles_done, loads_issued, store_wait : Out(32)
        Tiles retired; loads taken; cycles with a store offered and not taken.
    done : Out(1)
        ``run``, ``tiles`` tiles dispatched, every unit free, the write buffer empty.
    error, error_cycle : Out(4), Out(40)
        Sticky :data:`ERR_TAG`, :data:`ERR_OVERFLOW`, :data:`ERR_LOADS` (bit 3 unused); the
        cycle of the first.
    """

    def __init__(self, params: EngineParams, *, cus, burst_bytes, tag_width, wb_depth=64,
                 max_loads=MAX_LOADS):
        try:
            self._check_params(params, cus=cus, burst_bytes=burst_bytes, tag_width=tag_width,
                               wb_depth=wb_depth, max_loads=max_loads)
        except ValueError:
            self._MustUse__silence = True
            raise
        p = params
        self.params, self.cus, self.burst, self.tag_width = p, cus, burst_bytes, tag_width
        self.wb_depth, self.max_loads = wb_depth, max_loads
        self.cu_width = max(1, (cus - 1).bit_length())
        super().__init__({
            "run": In(1), "cycle": In(CYCLE_WIDTH), "tiles": In(32), "compute": In(32),
            "load": Out(stream.Signature(load_layout(p))),
            "load_response": In(stream.Signature(load_response_layout(p))),
            "store": Out(stream.Signature(store_layout(p))),
            "retire": Out(cus), "dispatch": Out(cus),
            "desc": In(data.ArrayLayout(desc_layout(p), cus)), "dispatched": Out(32),
            "event": Out(1), "stamp": Out(CYCLE_WIDTH),
            "tiles_done": Out(32), "loads_issued": Out(32), "store_wait": Out(32),
            "done": Out(1), "error": Out(4), "error_cycle": Out(CYCLE_WIDTH),
        })

    @staticmethod
    def _check_params(params, *, cus, burst_bytes, tag_width, wb_depth, max_loads):
        """Check the parameters (``ValueError`` naming the value and its range)."""
        if not isinstance(params, EngineParams):
            raise ValueError(f"params must be an EngineParams, not {params!r}")
        p = params
        _check("cus", cus, 1, 256)
        _check("burst_bytes", burst_bytes, 1, p.burst_bytes)
        _check("tag_width", tag_width, 1, p.load_tag_width)
        _check("wb_depth", wb_depth, 1, 1 << 16)
        _check("max_loads", max_loads, 1, (1 << LOADS_WIDTH) - 1)

    def elaborate(self, platform):
        m = Module()
        n, ntags = self.cus, 1 << self.tag_width
        lw = self.max_loads.bit_length()
        self._u = u = {
            "busy": [Signal(name=f"busy{k}") for k in range(n)],
            "left": [Signal(lw, name=f"left{k}") for k in range(n)],
            "out": [Signal(range(ntags + 1), name=f"out{k}") for k in range(n)],
            "addr": [Signal(self.params.addr_width, name=f"addr{k}") for k in range(n)],
            "end": [Signal(CYCLE_WIDTH, name=f"end{k}") for k in range(n)],
            "due": [Signal(CYCLE_WIDTH, name=f"due{k}") for k in range(n)],
            "due_v": [Signal(name=f"due_v{k}") for k in range(n)],
            "sd": [Signal(data.StructLayout(_store_fields(self.params)), name=f"sd{k}")
                   for k in range(n)],
        }
        ret = self._events(m)
        issue, back, bad_tag = self._load_side(m)
        over_loads = Signal()
        cyc = self.cycle
        for k in range(n):
            left, out, d = u["left"][k], u["out"][k], self.desc[k]
            with m.If(self.dispatch[k]):
                clamped = Mux(d.loads > self.max_loads, self.max_loads, d.loads)
                m.d.sync += [
                    u["busy"][k].eq(1), left.eq(clamped), out.eq(0),
                    u["addr"][k].eq(d.load_addr), u["end"][k].eq(cyc + self.compute),
                    u["due_v"][k].eq(d.loads == 0), u["due"][k].eq(cyc + self.compute),
                ]
                m.d.sync += [u["sd"][k][f].eq(d[f]) for f in _STORE_FIELDS]
            with m.Elif(ret[k]):
                m.d.sync += [u["busy"][k].eq(0), u["due_v"][k].eq(0)]
            with m.Else():
                new_left = Signal(lw, name=f"new_left{k}")
                new_out = Signal(range(ntags + 1), name=f"new_out{k}")
                m.d.comb += [new_left.eq(left - issue[k]), new_out.eq(out + issue[k] - back[k])]
                m.d.sync += [left.eq(new_left), out.eq(new_out)]
                with m.If(issue[k]):
                    m.d.sync += u["addr"][k].eq(u["addr"][k] + self.burst)
                with m.If(back[k] & (new_out == 0) & (new_left == 0)):
                    m.d.sync += [u["due_v"][k].eq(1),
                                 u["due"][k].eq(Mux(u["end"][k] > cyc + 1, u["end"][k], cyc + 1))]
        m.d.comb += over_loads.eq(Cat(self.dispatch[k] & (self.desc[k].loads > self.max_loads)
                                      for k in range(n)).any())
        overflow = self._write_buffer(m, ret)
        m.d.comb += self.done.eq(self.run & (self.dispatched == self._tiles)
                                 & ~Cat(*u["busy"]).any() & (self._wb_count == 0))
        new = Cat(bad_tag, overflow, over_loads, C(0, 1))
        with m.If((new != 0) & (self.error == 0)):
            m.d.sync += self.error_cycle.eq(cyc)
        m.d.sync += self.error.eq(self.error | new)
        return m

    def _events(self, m):
        """Retire and dispatch masks, ``dispatched``, ``event`` and ``stamp``: from registers,
        ``run`` and ``cycle``. Returns the retire bits."""
        u, n, cyc = self._u, self.cus, self.cycle
        ret = [Signal(name=f"ret{k}") for k in range(n)]
        free = [Signal(name=f"free{k}") for k in range(n)]
        self._tiles = tiles = Signal(32)           # `tiles`, registered: no path to outputs
        m.d.sync += tiles.eq(self.tiles)
        rank = C(0, range(n + 1))
        for k in range(n):
            m.d.comb += [
                ret[k].eq(self.run & u["busy"][k] & u["due_v"][k] & (u["due"][k] <= cyc)),
                free[k].eq(~u["busy"][k] | ret[k]),
                self.dispatch[k].eq(self.run & free[k] & (self.dispatched + rank < tiles)),
            ]
            rank = rank + free[k]
        m.d.comb += [
            self.retire.eq(Cat(*ret)),
            self.event.eq(self.run & (Cat(*ret).any() | self.dispatch.any())),
            self.stamp.eq(Mux(self.event, cyc + 1, 0)),
        ]
        m.d.sync += self.dispatched.eq(self.dispatched + sum(self.dispatch[k] for k in range(n)))
        return ret

    def _load_side(self, m):
        """The load offer (round robin, held until taken), the free-tag FIFO, the tag to
        unit map and the responses. Returns per unit: a load taken, a response back; and
        the bad-tag error."""
        u, n, ntags, tw = self._u, self.cus, 1 << self.tag_width, self.tag_width
        # the free-tag FIFO: 0 .. ntags - 1 at first; pop at the head, push at the tail
        tags = Memory(shape=tw, depth=ntags, init=list(range(ntags)))
        m.submodules.tags = tags
        head, tail = Signal(tw), Signal(tw)
        count = Signal(range(ntags + 1), init=ntags)
        # tag -> (unit, outstanding)
        owner = Memory(shape=data.StructLayout({"cu": self.cu_width, "valid": 1}),
                       depth=ntags, init=[])
        m.submodules.owner = owner
        rr, held, held_k = Signal(self.cu_width), Signal(), Signal(self.cu_width)
        cand = [u["busy"][k] & (u["left"][k] != 0) for k in range(n)]
        pick, found = Signal(self.cu_width), Signal()
        for k in reversed(range(n)):                  # the first k >= rr, else the first k
            with m.If(cand[k]):
                m.d.comb += [pick.eq(k), found.eq(1)]
        for k in reversed(range(n)):
            with m.If(cand[k] & (k >= rr)):
                m.d.comb += pick.eq(k)
        offer_k = Signal(self.cu_width)
        head_rd = tags.read_port(domain="comb")
        m.d.comb += [
            offer_k.eq(Mux(held, held_k, pick)),
            head_rd.addr.eq(head),
            self.load.valid.eq(held | (found & (count != 0))),
            self.load.payload.addr.eq(Array(u["addr"])[offer_k]),
            self.load.payload.bytes.eq(self.burst),
            self.load.payload.tag.eq(head_rd.data),
            self.load_response.ready.eq(1),
        ]
        take = self.load.valid & self.load.ready
        m.d.sync += [held.eq(self.load.valid & ~self.load.ready), held_k.eq(offer_k)]
        with m.If(take):
            m.d.sync += [rr.eq(Mux(offer_k == n - 1, 0, offer_k + 1)),
                         self.loads_issued.eq(self.loads_issued + 1)]
        # responses; one to a load taken this very cycle is accepted, as the Python model
        # issues before it returns
        rsp = self.load_response
        tag = rsp.payload.tag
        in_range = (tag >> tw) == 0 if len(tag) > tw else C(1)
        own = owner.read_port(domain="comb")
        same = take & (tag[:tw] == head_rd.data)
        good = Signal()
        back_k = Signal(self.cu_width)
        m.d.comb += [
            own.addr.eq(tag[:tw]),
            good.eq(rsp.valid & in_range & (own.data.valid | same)),
            back_k.eq(Mux(same, offer_k, own.data.cu)),
        ]
        set_w, clr_w, push_w = owner.write_port(), owner.write_port(), tags.write_port()
        m.d.comb += [
            set_w.addr.eq(head_rd.data), set_w.data.cu.eq(offer_k), set_w.data.valid.eq(1),
            set_w.en.eq(take & ~(good & same)),
            clr_w.addr.eq(tag[:tw]), clr_w.data.valid.eq(0), clr_w.en.eq(good & ~same),
            push_w.addr.eq(tail), push_w.data.eq(tag[:tw]), push_w.en.eq(good),
        ]
        m.d.sync += [head.eq(head + take), tail.eq(tail + good), count.eq(count - take + good)]
        issue = [take & (offer_k == k) for k in range(n)]
        back = [good & (back_k == k) for k in range(n)]
        return issue, back, rsp.valid & ~good

    def _write_buffer(self, m, ret):
        """The FIFO of the retired tiles' store descriptors (several pushes a cycle, in unit
        order) and the burst expander of its head on ``store``. Returns the overflow error."""
        n, depth = self.cus, self.wb_depth
        wb = Memory(shape=data.StructLayout(_store_fields(self.params)), depth=depth, init=[])
        m.submodules.wb = wb
        head, tail = Signal(range(depth)), Signal(range(depth))
        self._wb_count = count = Signal(range(depth + 1))
        row = Signal(16)
        off = Signal(16)
        head_rd = wb.read_port(domain="comb")
        d = head_rd.data
        left = Signal(17)
        m.d.comb += [
            head_rd.addr.eq(head), left.eq(d.row_bytes - off),
            self.store.valid.eq(count != 0),
            self.store.payload.addr.eq(d.addr0 + row * d.pitch + off),
            self.store.payload.tile.eq(d.tid),
            self.store.payload.bytes.eq(Mux(left < self.burst, left, self.burst)),
            self.store.payload.kind.eq(WriteKind.UPDATE),
        ]
        taken = self.store.valid & self.store.ready
        row_end = off + self.burst >= d.row_bytes
        pop = Signal()
        m.d.comb += pop.eq(taken & row_end & (row + 1 == d.rows))
        with m.If(taken):
            m.d.sync += off.eq(Mux(row_end, 0, off + self.burst))
            with m.If(row_end):
                m.d.sync += row.eq(Mux(pop, 0, row + 1))
        with m.If(self.store.valid & ~self.store.ready):
            m.d.sync += self.store_wait.eq(self.store_wait + 1)
        # pushes: unit k's descriptor goes to slot tail + (units retiring before k), if it fits
        space = Signal(range(depth + 2))
        m.d.comb += space.eq(depth - count + pop)
        rank = C(0, range(n + 1))
        for k in range(n):
            wp = wb.write_port()
            slot = tail + rank
            m.d.comb += [wp.addr.eq(Mux(slot >= depth, slot - depth, slot)),
                         wp.data.eq(self._u["sd"][k]), wp.en.eq(ret[k] & (rank < space))]
            rank = rank + ret[k]
        nret = Signal(range(n + 1))
        pushed = Signal(range(n + 1))
        m.d.comb += [nret.eq(rank), pushed.eq(Mux(nret > space, space, nret))]
        nt, nh = tail + pushed, head + pop
        m.d.sync += [
            tail.eq(Mux(nt >= depth, nt - depth, nt)), head.eq(Mux(nh >= depth, nh - depth, nh)),
            count.eq(count + pushed - pop), self.tiles_done.eq(self.tiles_done + nret),
        ]
        return nret > space
