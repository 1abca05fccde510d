# SPDX-License-Identifier: Apache-2.0
"""Reference model of the address map (:mod:`t3hw.hw.addrmap`).

* :class:`AddrMapModel`: the transaction semantics: region programming with its checks and
  sticky errors, and the classification of one store into a network packet or a memory
  store, with the counters.

The cycle-exact environment that drives and scores the RTL against it, and the scenarios,
are in :mod:`t3hw.verif.addrmap_env`.

Field names come from :mod:`t3hw.spec.layouts` through :class:`~t3hw.spec.layouts.Codec`.
"""

from t3hw.spec.layouts import (RegionMode, WriteKind, addrmap_errors_layout, addrmap_stats_layout,
                               region_layout)
from t3hw.spec.params import EngineParams

from .env import BlockModel


__all__ = ["AddrMapModel"]

_MODES = {m.value for m in RegionMode}


class AddrMapModel(BlockModel):
    """Transaction-level address map.

    Parameters
    ----------
    params : EngineParams, optional

    Attributes
    ----------
    regions : list of dict or None
        The region table (fields of :func:`t3hw.spec.layouts.region_layout`); ``None`` = invalid.
    errors : dict of str to bool
        Sticky error bits, keyed by the RTL's field names.
    stats : dict of str to int
        Counters, keyed by the RTL's field names (wrapping at ``counter_width``).
    """

    def __init__(self, params: EngineParams = None):
        super().__init__(params, addrmap_errors_layout, addrmap_stats_layout)
        self.fields = list(region_layout(self.params).members)
        self.regions = [None] * self.params.regions

    def overlaps(self, index, base, size):
        """Whether ``[base, base + size)`` overlaps a valid region other than ``index``."""
        return any(r is not None and i != index and base < r["base"] + r["size"]
                   and r["base"] < base + size for i, r in enumerate(self.regions))

    def program(self, index, **region):
        """Write region ``index``; returns False (and sets an error) when rejected."""
        if not 0 <= index < self.params.regions:
            raise ValueError(f"index must be in [0, {self.params.regions - 1}], not {index!r}")
        region = {k: int(getattr(v, "value", v)) for k, v in region.items()}
        if not region.get("valid", 0):
            self.regions[index] = None
            return True
        base, size = region.get("base", 0), region.get("size", 0)
        if size == 0 or base + size > (1 << self.params.addr_width) \
                or region.get("mode", 0) not in _MODES:
            self.errors["bad_region"] = True
            return False
        if self.overlaps(index, base, size):
            self.errors["overlap"] = True
            return False
        self.regions[index] = {name: region.get(name, 0) for name in self.fields}
        return True

    def lookup(self, addr):
        """The region holding ``addr``, or ``None``."""
        for r in self.regions:
            if r is not None and r["base"] <= addr < r["base"] + r["size"]:
                return r
        return None

    def classify(self, addr, tile, bytes, kind=WriteKind.STORE):
        """One store: returns ``("net", packet fields)`` or ``("mem", store fields)``."""
        kind = int(getattr(kind, "value", kind))
        r = self.lookup(addr)
        mode = None if r is None else RegionMode(r["mode"])
        name = {None: "unmapped", RegionMode.LOCAL: "local", RegionMode.TRACKED: "tracked",
                RegionMode.REMOTE: "remote"}[mode]
        self._bump(name)
        if mode == RegionMode.REMOTE:
            amask = (1 << self.params.addr_width) - 1
            return "net", dict(device=r["device"], addr=(r["remote_base"] + addr - r["base"])
                               & amask, kind=WriteKind.UPDATE.value, tile=tile, bytes=bytes)
        return "mem", dict(addr=addr, tile=tile, bytes=bytes, kind=kind,
                           tracked=int(mode == RegionMode.TRACKED))


    def receive(self, addr, tile, bytes, kind=WriteKind.UPDATE, device=0):
        """A packet from the network: the local store it becomes (``tracked`` when ``addr``
        lies in a ``TRACKED`` region)."""
        r = self.lookup(addr)
        return dict(addr=addr, tile=tile, bytes=bytes, kind=int(getattr(kind, "value", kind)),
                    tracked=int(r is not None and r["mode"] == RegionMode.TRACKED.value))
