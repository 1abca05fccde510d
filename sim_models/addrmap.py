# SPDX-License-Identifier: Apache-2.0
"""Reference model of the address map (:mod:`t3hw.hw.addrmap`).

* :class:`AddrMapModel`: the transaction semantics: region programming with its checks and
  sticky errors, the classification of one store into a network packet or a memory store
  (or its refusal), the checks of one received packet, with the counters and the details
  (capture fields) of each refusal.

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
    device_id : int
        This GPU's device number (the RTL's ``device_id`` input): received packets for
        another device are refused.
    rejection : tuple or None
        The last region write rejected: ``(error name, capture fields)`` (its ``base`` and
        ``device``, tile 0).
    """

    def __init__(self, params: EngineParams = None):
        super().__init__(params, addrmap_errors_layout, addrmap_stats_layout)
        self.fields = list(region_layout(self.params).members)
        self.regions = [None] * self.params.regions
        self.device_id = 0
        self.rejection = None

    def overlaps(self, index, base, size):
        """Whether ``[base, base + size)`` overlaps a valid region other than ``index``."""
        return any(r is not None and i != index and base < r["base"] + r["size"]
                   and r["base"] < base + size for i, r in enumerate(self.regions))

    def program(self, index, **region):
        """Write region ``index``; returns False when rejected, and sets the error (its name
        and capture fields are then in :attr:`rejection`)."""
        if not 0 <= index < self.params.regions:
            raise ValueError(f"index must be in [0, {self.params.regions - 1}], not {index!r}")
        region = {k: int(getattr(v, "value", v)) for k, v in region.items()}
        if not region.get("valid", 0):
            self.regions[index] = None
            return True
        base, size = region.get("base", 0), region.get("size", 0)
        capture = dict(addr=base, device=region.get("device", 0), tile=0)
        if size == 0 or base + size > (1 << self.params.addr_width) \
                or region.get("mode", 0) not in _MODES:
            self.errors["bad_region"] = True
            self.rejection = ("bad_region", capture)
            return False
        if self.overlaps(index, base, size):
            self.errors["overlap"] = True
            self.rejection = ("overlap", capture)
            return False
        self.regions[index] = {name: region.get(name, 0) for name in self.fields}
        return True

    def lookup(self, addr):
        """The region holding ``addr``, or ``None``."""
        for r in self.regions:
            if r is not None and r["base"] <= addr < r["base"] + r["size"]:
                return r
        return None

    def _refuse(self, name, **capture):
        """Set error ``name``, count it, and return ``(name, capture fields)``."""
        self.errors[name] = True
        self._bump(name)
        return name, capture

    def classify(self, addr, tile, bytes, kind=WriteKind.STORE):
        """One store: returns ``("net", packet fields)``, ``("mem", store fields)`` or, when
        it is refused because it crosses its region's end, ``("store_crosses", capture
        fields)`` (:func:`~t3hw.spec.layouts.addrmap_capture_layout`: its address, the
        region's device, its tile)."""
        kind = int(getattr(kind, "value", kind))
        r = self.lookup(addr)
        if r is not None and addr + bytes > r["base"] + r["size"]:
            return self._refuse("store_crosses", addr=addr, device=r["device"], tile=tile)
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
        """A packet from the network: ``("rx_mem", the local store it becomes)`` (``tracked``
        when ``addr`` lies in a ``TRACKED`` region), or, refused, ``(error name, capture
        fields)``: the first that applies of ``rx_misrouted`` (``device`` is not
        :attr:`device_id`), ``rx_remote`` (in a ``REMOTE`` region), ``rx_unmapped`` (in no
        ``LOCAL`` or ``TRACKED`` region), ``rx_crosses`` (it ends past its region)."""
        capture = dict(addr=addr, device=device, tile=tile)
        r = self.lookup(addr)
        mode = None if r is None else RegionMode(r["mode"])
        if device != self.device_id:
            return self._refuse("rx_misrouted", **capture)
        if mode == RegionMode.REMOTE:
            return self._refuse("rx_remote", **capture)
        if mode is None:
            return self._refuse("rx_unmapped", **capture)
        if addr + bytes > r["base"] + r["size"]:
            return self._refuse("rx_crosses", **capture)
        return "rx_mem", dict(addr=addr, tile=tile, bytes=bytes,
                              kind=int(getattr(kind, "value", kind)),
                              tracked=int(mode == RegionMode.TRACKED))
