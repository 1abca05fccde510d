# SPDX-License-Identifier: Apache-2.0
"""The cycle-exact environment of the address map (:mod:`t3hw.hw.addrmap`), scored against
its reference model (:class:`sim_models.addrmap.AddrMapModel`), and the scenarios.

* :class:`AddrMapEnv`: seeded random region writes (including overlapping, empty, wrapping
  and unknown-mode ones), stores and packets from the network aimed at region boundaries
  (``base - 1``, ``base``, ``base + size - 1``, ``base + size``), with idle cycles and
  back-pressure on the three outputs. The address map is small enough to score cycle by
  cycle: ``store.ready`` and ``rx.ready``, and ``valid`` and every payload field of ``net``,
  ``mem`` and ``rx_mem``, every cycle.
* Scenarios shared by the amaranth.sim tests and the cocotb testbench: :func:`drain`,
  :func:`boundaries`, :func:`provoke_errors`, :func:`refusals`, :func:`back_to_back`.

Field names come from :mod:`t3hw.spec.layouts` through :class:`~t3hw.spec.layouts.Codec`.
"""

from collections import deque

from t3hw.spec.contract import (addrmap_latency, addrmap_program_cycles, addrmap_queue_depth,
                                addrmap_verdict_cycles)
from t3hw.spec.layouts import (Codec, RegionMode, WriteKind, addrmap_capture_layout,
                               mem_store_layout, net_packet_layout, region_program_layout,
                               store_layout)

from sim_models.addrmap import AddrMapModel

from .env import Stall, StreamEnv


__all__ = ["AddrMapEnv", "drain", "boundaries", "provoke_errors", "refusals", "back_to_back"]


class AddrMapEnv(StreamEnv):
    """Random stimulus and cycle-exact scoreboard for :class:`t3hw.hw.addrmap.AddrMap`.

    Parameters
    ----------
    params : EngineParams
    rng : random.Random
        Seeded source of randomness.
    stores : int
        Random stores to send (0 for directed use only).
    errors : float
        Rate of deliberately bad region writes, in [0, 1).
    stall : float
        Probability per cycle that a back-pressure burst starts on ``net``, on ``mem`` and
        on ``rx_mem`` (each), in [0, 1).
    misrouted : float
        Rate of random packets for another device than ``device_id``, in [0, 1).

    Stimulus: stores and packets aimed at region boundaries (``base - 1``, ``base``,
    ``base + size - 1``, ``base + size``) and at the last ``burst_bytes`` of a region with
    random byte counts (some crossing its end), so every class and every refusal occurs;
    ``device_id`` (:attr:`device_id`) is random and changes now and then.

    Scoring, every cycle, from the contract's figures (:mod:`t3hw.spec.contract`): latency
    ``L`` (:func:`~t3hw.spec.contract.addrmap_latency`), ``Q`` requests held
    (:func:`~t3hw.spec.contract.addrmap_queue_depth`), a region write's verdict ``V``
    cycles after it is taken (:func:`~t3hw.spec.contract.addrmap_verdict_cycles`) and
    ``program.ready`` low for :func:`~t3hw.spec.contract.addrmap_program_cycles` - 1 cycles
    after it. ``store.ready`` is high exactly when fewer than ``Q`` stores are held (accepted
    and neither taken nor refused); a store accepted in cycle t is classified by
    :class:`AddrMapModel` against the table as it stands then, refused in t + L - 1 or shown
    on ``net`` or ``mem`` from t + L on, in order, every payload field compared, held while
    not taken. Packets the same way on ``rx`` and ``rx_mem``. A region write taken in t
    applies to the model in t + V - 1, after the store and the packet accepted in that
    cycle. ``errors`` and ``capture``, every cycle: a refused store or packet is an event in
    the cycle it is classified, a rejected region write in t + V - 1; ``errors`` shows the
    cycle's events one cycle later (sticky, ``clear`` applied), ``capture`` the details of
    the one that wins (store, then packet, then region write) and holds them.

    ``rx_held`` counts the cycles in which a packet on ``rx`` was refused because ``Q``
    packets were held (behind a stalled ``rx_mem``; a random run that has not met one by
    half way holds ``rx_mem`` low until it does, ``rx_forced`` cycles); ``prog_held`` the
    cycles a region write waited for ``program.ready``; ``coincident`` the cycles with more
    than one error event.
    """

    in_streams  = ("store", "program", "rx")
    out_streams = ("net", "mem", "rx_mem")
    in_flags    = ("clear", "device_id")
    out_flags   = ("errors", "stats", "capture")

    def __init__(self, params, rng, *, stores=0, errors=0.05, stall=0.1, misrouted=0.05):
        super().__init__()
        for name, value in (("errors", errors), ("stall", stall), ("misrouted", misrouted)):
            if not 0 <= value < 1:
                raise ValueError(f"{name} must be in [0, 1), not {value!r}")
        self.p, self.rng = params, rng
        self.model = AddrMapModel(params)
        self.stores, self.error_rate, self.misrouted = stores, errors, misrouted
        self.region_writes = 0                  # random region writes made (_region)
        self.store_c   = Codec(store_layout(params))
        self.program_c = Codec(region_program_layout(params))
        self.net_c     = Codec(net_packet_layout(params))
        self.mem_c     = Codec(mem_store_layout(params))
        self.capture_c = Codec(addrmap_capture_layout(params))
        # Stalls long enough to fill the Q requests held, and more.
        longest = 2 * addrmap_queue_depth(params)
        self.net_stall = Stall(rng, stall, longest)
        self.mem_stall = Stall(rng, stall, longest)
        self.rx_stall  = Stall(rng, stall, longest)
        self.device_id = rng.getrandbits(params.device_width) if stores else 0
        self.latency  = addrmap_latency(params)
        self.depth    = addrmap_queue_depth(params)
        self.verdict  = addrmap_verdict_cycles(params)
        self.busy_for = addrmap_program_cycles(params) - 1
        self.store = None           # fields presented on `store`
        self.rx = None              # fields presented on `rx`
        self.received = 0           # packets accepted on `rx`
        self.rx_tracked = 0         # ... of which written, tracked
        self.rx_refused = 0         # ... of which refused
        self.rx_held = 0            # cycles `rx` refused: Q packets held
        self.rx_forced = 0          # cycles rx_mem was held low to reach that (random runs)
        self.prog = None            # (index, fields) presented on `program`
        self.prog_held = 0          # cycles a region write waited for program.ready
        self.busy = 0               # the RTL's busy count: program.ready = busy == 0
        self.decide = deque()       # (cycle, index, fields): region writes taken, to apply
        self.scripted = []          # ("store"/"rx", fields) / ("program", index, fields)
        # Per path: requests in flight (cycle classified, where, fields), in order; the
        # output queue (cycle shown from, fields); the count held.
        self.flight = {"store": deque(), "rx": deque()}
        self.queue  = {"store": deque(), "rx": deque()}
        self.held   = {"store": 0, "rx": 0}
        self.sent = 0               # stores accepted
        self.taken = {"net": 0, "mem": 0, "rx_mem": 0}
        self.rejected = 0           # region writes rejected
        self.clear = 0
        self.errors_out = 0         # expected `errors`
        self.capture = dict.fromkeys(self.capture_c.names, 0)   # expected `capture`
        self.coincident = 0         # cycles with more than one error event

    # -- stimulus --------------------------------------------------------------------------
    def send(self, addr, tile=0, bytes=1, kind=WriteKind.STORE):
        """Directed: present a store (after the requests already scripted)."""
        self.scripted.append(("store", dict(addr=addr, tile=tile, bytes=bytes,
                                            kind=int(getattr(kind, "value", kind)))))

    def receive(self, addr, device=None, tile=0, bytes=1, kind=WriteKind.UPDATE):
        """Directed: present a packet on ``rx`` (after the requests already scripted), for
        :attr:`device_id` unless ``device`` is given."""
        self.scripted.append(("rx", dict(device=self.device_id if device is None else device,
                                         addr=addr, tile=tile, bytes=bytes,
                                         kind=int(getattr(kind, "value", kind)))))

    def write(self, index, **region):
        """Directed: present a region write (after the requests already scripted)."""
        self.scripted.append(("program", index, region))

    def _region(self, index):
        """A random write of region ``index``: mostly well formed, sometimes each of the
        errors (empty, past the top of the address space, a bad mode, and, on purpose, over
        another valid region: sometimes, and always from the 16th write on until one was
        refused as an overlap, so that every run at every parameter set has one)."""
        p, rng = self.p, self.rng
        top = 1 << p.addr_width
        self.region_writes += 1
        others = [r for i, r in enumerate(self.model.regions) if r is not None and i != index]
        due = self.region_writes >= 16 and not self.model.errors["overlap"]
        if others and (due or rng.random() < self.error_rate / 2):
            other = rng.choice(others)
            base = other["base"] + rng.randrange(other["size"])     # starts inside it
            return dict(valid=1, mode=rng.choice(list(RegionMode)).value,
                        device=rng.getrandbits(p.device_width), base=base,
                        size=rng.randint(1, top - base),
                        remote_base=rng.getrandbits(p.addr_width))
        size = rng.choice([1, rng.randint(1, 64), rng.randint(1, max(1, top >> 4)),
                           rng.randint(1, top - 1)])
        base = rng.choice([0, top - size, rng.randint(0, top - size)])
        r = rng.random()
        if r < self.error_rate:
            size = 0
        elif r < 2 * self.error_rate:
            base = rng.randint(top - size + 1, top - 1) if size > 1 else top - 1
            size = max(size, 2)
        mode = rng.choice(list(RegionMode)).value
        if rng.random() < self.error_rate:
            mode = 3
        region = dict(valid=int(rng.random() > 0.1), mode=mode,
                      device=rng.getrandbits(p.device_width), base=base, size=size,
                      remote_base=rng.getrandbits(p.addr_width))
        if region["valid"] and mode != 3 and size and base + size <= top \
                and rng.random() > self.error_rate:
            for _ in range(8):                  # mostly well formed: avoid overlaps
                if not self.model.overlaps(-1, base, size):
                    break
                size = max(1, size // 4)
                base = rng.randint(0, top - size)
            region.update(base=base, size=size)
        return region

    def _address(self):
        """A random address, mostly at a valid region's boundaries or in its last
        ``burst_bytes`` bytes (where a request may cross its end)."""
        p, rng = self.p, self.rng
        mask = (1 << p.addr_width) - 1
        valid = [r for r in self.model.regions if r is not None]
        if not valid or rng.random() < 0.1:
            return rng.getrandbits(p.addr_width)
        r = rng.choice(valid)
        end = r["base"] + r["size"]
        return rng.choice([r["base"] - 1, r["base"], end - 1, end,
                           end - rng.randint(1, p.burst_bytes),
                           r["base"] + rng.randint(0, r["size"] - 1)]) & mask

    def _random(self):
        """This cycle's random stimulus (while stores are left to send)."""
        p, rng = self.p, self.rng
        if self.store is None and rng.random() < 0.8:
            self.store = dict(addr=self._address(), tile=rng.getrandbits(p.tile_width),
                              bytes=rng.randint(1, p.burst_bytes),
                              kind=rng.choice(list(WriteKind)).value)
        if self.prog is None and rng.random() < 0.03:
            index = rng.randrange(p.regions)
            self.prog = (index, self._region(index))
        if self.rx is None and rng.random() < 0.5:
            device = self.device_id
            if rng.random() < self.misrouted:
                device ^= rng.randint(1, (1 << p.device_width) - 1)
            self.rx = dict(device=device, addr=self._address(),
                           kind=rng.choice(list(WriteKind)).value,
                           tile=rng.getrandbits(p.tile_width),
                           bytes=rng.randint(1, p.burst_bytes))
        if rng.random() < 0.002:
            self.device_id = rng.getrandbits(p.device_width)

    def inputs(self):
        if self.scripted and self.store is None and self.rx is None and self.prog is None:
            head = self.scripted.pop(0)
            if head[0] == "store":
                self.store = head[1]
            elif head[0] == "rx":
                self.rx = head[1]
            else:
                self.prog = head[1:]
        if self.sent < self.stores:
            self._random()
            # From half way, if no packet has yet been refused for Q held behind a stalled
            # rx_mem (random stalls reach it at most seeds, not all), hold rx_mem low until
            # one is (or for 64 Q cycles), so that every random run covers it.
            force = (not self.rx_held and self.sent >= self.stores // 2
                     and self.rx_forced < 64 * self.depth)
            self.rx_stall.hold = force
            self.rx_forced += force
        return {
            "rx":        None if self.rx is None else self.net_c.pack(**self.rx),
            "rx_mem":    self.rx_stall.ready(),
            "store":     None if self.store is None else self.store_c.pack(**self.store),
            "program":   None if self.prog is None
            else self.program_c.pack(index=self.prog[0], **self.prog[1]),
            "net":       self.net_stall.ready(),
            "mem":       self.mem_stall.ready(),
            "clear":     self.clear,
            "device_id": self.device_id,
        }

    # -- scoring ---------------------------------------------------------------------------
    def _shown(self, path):
        """The head of ``path``'s output queue if it is shown this cycle, else None."""
        q = self.queue[path]
        return q[0][1] if q and q[0][0] <= self.cycle else None

    def check(self, outs):
        ins, cyc = self._ins, self.cycle
        expect = dict.fromkeys(("net", "mem", "rx_mem"))
        for path in ("store", "rx"):
            head = self._shown(path)
            if head is not None:
                expect[head[0]] = head[1]
        codecs = {"net": self.net_c, "mem": self.mem_c, "rx_mem": self.mem_c}
        for name in ("net", "mem", "rx_mem"):
            got = None if outs[name] is None else codecs[name].unpack(outs[name])
            assert got == expect[name], f"cycle {cyc}: {name} {got}, model {expect[name]}"
        errors = self.model.errors_codec.unpack(outs["errors"])
        want = self.model.errors_codec.unpack(self.errors_out)
        assert errors == want, f"cycle {cyc}: errors {errors}, model {want}"
        capture = self.capture_c.unpack(outs["capture"])
        assert capture == self.capture, f"cycle {cyc}: capture {capture}, model {self.capture}"
        ready = {path: self.held[path] < self.depth for path in ("store", "rx")}
        for port, path in (("store", "store"), ("rx", "rx")):
            assert outs[port] == ready[path], \
                f"cycle {cyc}: {port}.ready {outs[port]}, model {ready[path]}"
        assert outs["program"] == (self.busy == 0), \
            f"cycle {cyc}: program.ready {outs['program']}, model {self.busy == 0}"
        self.rx_held += self.rx is not None and not ready["rx"]
        self.prog_held += self.prog is not None and self.busy != 0

        # -- the end of this cycle ---------------------------------------------------------
        events = []                                 # (error, capture fields), winner first
        for path in ("store", "rx"):                # classified this cycle
            flight = self.flight[path]
            if flight and flight[0][0] == cyc:
                _, where, fields = flight.popleft()
                if where in self.taken:
                    self.queue[path].append((cyc + 1, (where, fields)))
                else:
                    events.append((where, fields))
                    self.held[path] -= 1
        for name, value in expect.items():          # taken from the outputs
            if value is not None and ins[name]:
                path = "rx" if name == "rx_mem" else "store"
                self.queue[path].popleft()
                self.held[path] -= 1
                self.taken[name] += 1
        if self.store is not None and ready["store"]:   # accepted
            where, fields = self.model.classify(**self.store)
            self.flight["store"].append((cyc + self.latency - 1, where, fields))
            self.held["store"] += 1
            self.store = None
            self.sent += 1
        if self.rx is not None and ready["rx"]:
            self.model.device_id = ins["device_id"]
            where, fields = self.model.receive(**self.rx)
            self.flight["rx"].append((cyc + self.latency - 1, where, fields))
            self.held["rx"] += 1
            self.rx_tracked += where == "rx_mem" and fields["tracked"]
            self.rx_refused += where != "rx_mem"
            self.rx = None
            self.received += 1
        if self.decide and self.decide[0][0] == cyc:    # a region write's verdict
            _, index, fields = self.decide.popleft()
            if not self.model.program(index, **fields):
                self.rejected += 1
                events.append(self.model.rejection)
        if self.prog is not None and self.busy == 0:    # a region write taken
            self.decide.append((cyc + self.verdict - 1, *self.prog))
            self.prog = None
            self.busy = self.busy_for
        elif self.busy:
            self.busy -= 1
        self.errors_out &= ~ins["clear"]
        for name, _ in events:
            self.errors_out |= self.model.errors_codec.pack(**{name: 1})
        if events:
            self.capture = dict(events[0][1])
        self.coincident += len(events) > 1
        self._outs = outs

    def done(self):
        """All stores sent and taken, nothing scripted, every region write decided."""
        return (self.sent >= self.stores and self.store is None and not self.scripted
                and self.prog is None and not self.decide and self.rx is None
                and not any(self.flight.values()) and not any(self.queue.values()))

    def check_state(self):
        """Compare the sticky errors and every counter."""
        got_err = self.model.errors_codec.unpack(self._outs["errors"])
        exp_err = {k: int(v) for k, v in self.model.errors.items()}
        assert got_err == exp_err, f"errors {got_err}, model {exp_err}"
        got_stats = self.model.stats_codec.unpack(self._outs["stats"])
        assert got_stats == self.model.stats, f"stats {got_stats}, model {self.model.stats}"


# --- scenarios, shared by the amaranth.sim tests and the cocotb testbench ---------------------

async def drain(env, cycle, *, limit=1_000_000):
    """Run until the stimulus is done, then one more cycle, and compare errors and counters."""
    for _ in range(limit):
        await cycle()
        if env.done():
            await cycle()
            env.check_state()
            return
    raise AssertionError(f"not done after {limit} cycles (cycle {env.cycle})")


async def boundaries(env, cycle):
    """Regions of every mode, adjacent and at both ends of the address space; stores at
    ``base - 1``, ``base``, ``base + size - 1`` and ``base + size`` of each. The expected
    class of every store is written out here, independently of the model."""
    p = env.p
    top = 1 << p.addr_width
    s = 16
    layout = [                                  # (index, mode, base, size)
        (0, RegionMode.LOCAL,   0,          s),
        (1, RegionMode.REMOTE,  s,          s),    # adjacent to region 0
        (2, RegionMode.TRACKED, 4 * s,      s),
        (3, RegionMode.REMOTE,  top - s,    s),    # ends at the top of the address space
    ]
    for index, mode, base, size in layout:
        env.write(index, valid=1, mode=mode, device=1, base=base, size=size,
                  remote_base=0x40 + index)
    await drain(env, cycle)                     # every write in effect
    expect = {                                  # address -> (output, tracked)
        0: ("mem", 0), s - 1: ("mem", 0),                       # region 0
        s: ("net", None), 2 * s - 1: ("net", None),             # region 1
        2 * s: ("mem", 0),                                      # unmapped
        4 * s - 1: ("mem", 0), 4 * s: ("mem", 1), 5 * s - 1: ("mem", 1),
        5 * s: ("mem", 0),                                      # unmapped
        top - s - 1: ("mem", 0), top - s: ("net", None), top - 1: ("net", None),
    }
    for addr in expect:
        env.send(addr, tile=3, bytes=1)
    await drain(env, cycle)
    net = sum(1 for where, _ in expect.values() if where == "net")
    st = env.model.stats
    assert env.taken["net"] == net and env.taken["mem"] == len(expect) - net
    assert (st["local"], st["tracked"], st["remote"], st["unmapped"]) == (2, 2, 4, 4), st
    assert not any(env.model.errors.values())


async def provoke_errors(env, cycle):
    """Each region-write error alone (rejected writes leave the table unchanged), with its
    capture (the write's base and device), then cleared. The refusals: :func:`refusals`."""
    top = 1 << env.p.addr_width

    async def expect(name, base):
        await drain(env, cycle)
        set_bits = {k for k, v in env.model.errors.items() if v}
        assert set_bits == {name}, f"expected only {name}, model has {set_bits}"
        assert env.capture == dict(addr=base, device=1, tile=0), env.capture
        env.clear = (1 << env.model.errors_codec.width) - 1
        await cycle()
        env.clear = 0
        env.model.clear_errors()
        await drain(env, cycle)
        assert not any(env.model.errors.values())

    good = dict(valid=1, mode=RegionMode.REMOTE, device=1, base=0x20, size=0x20, remote_base=0)
    env.write(0, **good)
    await drain(env, cycle)
    for bad in (dict(base=0x80, size=0), dict(base=top - 0x10), dict(base=0x80, mode=3)):
        env.write(1, **dict(good, **bad))
        env.send(top - 0x8)                     # where the wrapping region would have been
        await expect("bad_region", dict(good, **bad)["base"])
    for base, size in ((0x10, 0x11), (0x3f, 1), (0, top - 1)):
        env.write(1, **dict(good, base=base, size=size))
        env.send(0x10)
        await expect("overlap", base)
    assert env.model.regions[1] is None and env.model.stats["remote"] == 0
    # Rewriting a region over itself is not an overlap; removing it always works.
    env.write(0, **dict(good, size=0x40))
    env.write(0, valid=0)
    await drain(env, cycle)                     # a write applies from its verdict on
    env.send(0x30)
    await drain(env, cycle)
    assert not any(env.model.errors.values()) and env.model.stats["remote"] == 0


async def refusals(env, cycle):
    """Every refused store and packet alone, and the accepted ones beside them, each with
    its expectations written out here (independently of the model): its error bit alone,
    its counter up by one and no other, ``capture`` (address, device, tile), then cleared.
    Regions: ``REMOTE`` ``[0x40, 0x80)`` to device 1, ``TRACKED`` ``[0x80, 0xc0)`` and, with
    3 regions or more, ``LOCAL`` ``[top - 0x40, top)`` (ending at the top of the address
    space). Needs ``burst_bytes`` >= 2 (a request of 1 byte cannot cross)."""
    p = env.p
    if p.burst_bytes < 2:
        raise ValueError(f"burst_bytes must be at least 2, not {p.burst_bytes!r}")
    mine = env.device_id = (1 << p.device_width) - 1
    other = mine ^ 1
    env.write(0, valid=1, mode=RegionMode.REMOTE, device=1, base=0x40, size=0x40,
              remote_base=0)
    env.write(1, valid=1, mode=RegionMode.TRACKED, device=0, base=0x80, size=0x40)
    local, top = p.regions >= 3, 1 << p.addr_width
    if local:
        env.write(2, valid=1, mode=RegionMode.LOCAL, device=2, base=top - 0x40, size=0x40)
    await drain(env, cycle)
    cases = [                       # (store or packet fields, counter, capture device)
        (("store", 0x7e, 2), "remote", None),              # ends at the region's end
        (("store", 0x7f, 2), "store_crosses", 1),          # the region's device
        (("store", 0x3f, 2), "unmapped", None),            # in no region: not checked
        (("store", 0xbf, 2), "store_crosses", 0),
        (("rx", 0x80, 2, mine), None, None),               # accepted, tracked
        (("rx", 0xbe, 2, mine), None, None),
        (("rx", 0x40, 1, other), "rx_misrouted", other),   # before the REMOTE check
        (("rx", 0x40, 1, mine), "rx_remote", mine),
        (("rx", 0x7f, 2, mine), "rx_remote", mine),        # before the crossing check
        (("rx", 0x3f, 2, mine), "rx_unmapped", mine),      # runs into a region
        (("rx", 0xc0, 1, mine), "rx_unmapped", mine),
        (("rx", 0xbf, 2, mine), "rx_crosses", mine),
    ]
    if local:
        cases += [(("store", top - 2, 2), "local", None),
                  (("store", top - 1, 2), "store_crosses", 2),
                  (("rx", top - 2, 2, mine), None, None),
                  (("rx", top - 1, 2, mine), "rx_crosses", mine)]
    for n, ((what, addr, nbytes, *device), counter, cap_device) in enumerate(cases):
        tile = n + 1
        before, taken = dict(env.model.stats), dict(env.taken)
        if what == "store":
            env.send(addr, tile=tile, bytes=nbytes)
        else:
            env.receive(addr, device=device[0], tile=tile, bytes=nbytes)
        await drain(env, cycle)
        moved = {k for k, v in env.model.stats.items() if v != before[k]}
        assert moved == ({counter} if counter else set()), f"case {n}: counters {moved}"
        set_bits = {k for k, v in env.model.errors.items() if v}
        if cap_device is None:
            assert not set_bits, f"case {n}: errors {set_bits}"
            out = "rx_mem" if what == "rx" else "net" if counter == "remote" else "mem"
            assert env.taken[out] == taken[out] + 1, f"case {n}: not written"
            continue
        assert set_bits == {counter}, f"case {n}: errors {set_bits}, expected {counter}"
        assert env.taken == taken, f"case {n}: a refused request was written"
        assert env.capture == dict(addr=addr, device=cap_device, tile=tile), \
            f"case {n}: capture {env.capture}"
        env.clear = (1 << env.model.errors_codec.width) - 1
        await cycle()
        env.clear = 0
        env.model.clear_errors()
    assert env.rx_tracked == 2


async def back_to_back(env, cycle):
    """Region writes in consecutive cycles are checked in order, each against the table as
    the one before it left it (the RTL compares a write with the one still in flight ahead of
    it). Each pair's verdict is written out here; stores into every range then check the
    table itself, cycle by cycle, against the model."""
    def region(base, size, mode=RegionMode.REMOTE):
        return dict(valid=1, mode=mode, device=1, base=base, size=size, remote_base=0x10)

    steps = [
        # (writes in consecutive cycles, the error bits they must set)
        ([(0, region(0x100, 0x100)), (1, region(0x180, 0x100))], {"overlap"}),
        ([(0, dict(valid=0)), (1, region(0x100, 0x100))], set()),       # its range, freed
        ([(1, region(0x400, 0x100)), (0, region(0x100, 0x100))], set()),   # moved away
        ([(0, region(0x100, 0x100, RegionMode.TRACKED)), (2, region(0x1f0, 0x20))],
         {"overlap"}),
        ([(2, region(0x200, 0x100)), (2, region(0x300, 0x10))], set()),    # replaced twice
    ]
    for writes, expect in steps:
        for index, fields in writes:
            env.write(index, **fields)
        for addr in (0x100, 0x1ff, 0x200, 0x280, 0x300, 0x30f, 0x310, 0x400):
            env.send(addr)
        await drain(env, cycle)
        got = {k for k, v in env.model.errors.items() if v}
        assert got == expect, f"writes {writes}: errors {got}, expected {expect}"
        env.clear = (1 << env.model.errors_codec.width) - 1
        await cycle()
        env.clear = 0
        env.model.clear_errors()
    want = {0: (0x100, 0x100, RegionMode.TRACKED.value), 1: (0x400, 0x100,
            RegionMode.REMOTE.value), 2: (0x300, 0x10, RegionMode.REMOTE.value)}
    got = {i: (r["base"], r["size"], r["mode"]) for i, r in enumerate(env.model.regions)
           if r is not None}
    assert got == want, got
