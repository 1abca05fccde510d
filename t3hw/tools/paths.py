# SPDX-License-Identifier: Apache-2.0
"""Output paths checked before any work is done.

A command that would write ``--json FILE`` or ``--out DIR`` after a build of a minute and
more checks first that it can: :func:`output_file` and :func:`output_dir` raise a
:exc:`~t3hw.tools.errors.CliError` naming the option, the path and what is wrong (a folder
where a file is wanted, a file where a folder is wanted, a folder that cannot be created or
written). They create nothing: the probe is a temporary file in the nearest existing folder,
removed at once. :func:`check_outputs` checks the output options of parsed arguments
(``t3hw``'s command table says which options are outputs).
"""

import os
import tempfile
from pathlib import Path

from .errors import CliError


__all__ = ["output_file", "output_dir", "check_outputs"]


def _existing_ancestor(path):
    """The nearest existing path at or above ``path`` (absolute)."""
    p = Path(os.path.abspath(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _probe(folder, option, path):
    """Create and remove a temporary file in ``folder``, or raise a :exc:`CliError`."""
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".t3hw-probe-")
    except OSError as exc:
        raise CliError(f"{option}: cannot write {path}: {folder} is not writable "
                       f"({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(name)


def _check_parent(folder, option, path):
    """The nearest existing folder at or above ``folder`` must be a writable folder (to
    write or create ``path``)."""
    top = _existing_ancestor(folder)
    if not top.is_dir():
        raise CliError(f"{option}: cannot create {path}: {top} is a file, not a folder")
    _probe(top, option, path)


def output_file(path, option):
    """Check that ``path`` (given as ``option``) can be written as a file."""
    if not str(path):
        raise CliError(f"{option}: the file name is empty")
    p = Path(path)
    if p.is_dir():
        raise CliError(f"{option}: {path} is a folder; name a file")
    if p.exists():
        try:
            with open(p, "ab"):
                pass
        except OSError as exc:
            raise CliError(f"{option}: cannot write {path} ({exc.strerror or exc})") from None
        return
    _check_parent(p.parent, option, path)


def output_dir(path, option):
    """Check that ``path`` (given as ``option``) is, or can be created as, a writable folder."""
    if not str(path):
        raise CliError(f"{option}: the folder name is empty")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise CliError(f"{option}: {path} is a file, not a folder; name a folder")
    _check_parent(p, option, path)


def check_outputs(args, outputs):
    """Check every output option of ``args``: ``outputs`` maps an attribute of ``args`` to
    ``"file"`` or ``"dir"``; options left unset (``None``) are skipped."""
    for dest, kind in outputs.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        option = "--" + dest.replace("_", "-")
        (output_file if kind == "file" else output_dir)(value, option)
