# SPDX-License-Identifier: Apache-2.0
"""GTKWave translate filter files for the enumerations of :mod:`t3hw.spec.layouts`.

A GTKWave *translate filter file* has one ``value name`` line per enum member; a trace that
names it (``^N file`` in the save file, and the ``ftranslated`` flag) shows ``REMOTE``
instead of ``2``. The files are written from the :class:`amaranth.lib.enum.Enum` classes
that type the layouts' fields, so a name or a code is never typed twice.
"""

from amaranth.lib import enum as amaranth_enum


__all__ = ["field_enum", "layout_enums", "filter_text", "write_filter"]

#: The display format the filter's values are written in (``datafmt`` of the trace).
DATAFMT = "hex"


def field_enum(layout, name):
    """The enum class of field ``name`` of the struct ``layout``, or ``None``."""
    shape = layout[name].shape
    if isinstance(shape, type) and issubclass(shape, amaranth_enum.Enum):
        return shape
    return None


def layout_enums(layout):
    """``{field name: enum class}`` of every enum-typed field of ``layout``."""
    out = {}
    for name, field in layout:
        e = field_enum(layout, name)
        if e is not None:
            out[name] = e
    return out


def filter_text(enum_cls):
    """The filter file of ``enum_cls``: ``value name`` per member, values in hex (as the
    trace shows them with ``datafmt="hex"``)."""
    return "".join(f"{m.value:x} {m.name}\n" for m in enum_cls)


def write_filter(enum_cls, folder):
    """Write ``folder/<EnumName>.txt`` (the filter of ``enum_cls``); returns its path."""
    from pathlib import Path
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{enum_cls.__name__}.txt"
    path.write_text(filter_text(enum_cls))
    return path
