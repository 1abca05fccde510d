# SPDX-License-Identifier: Apache-2.0
"""The tool look-ups of :mod:`t3hw.tools.toolchain` that no flow test reaches on its own."""

import os

from t3hw.tools import toolchain


def test_a_yowasp_tool_runs_once_under_a_lock_in_its_cache_before_it_is_used(tmp_path,
                                                                             monkeypatch):
    """:func:`toolchain.warm_yowasp`: the first ask of a process runs the tool once (its
    cache then complete before any real run), with the lock in YoWASP's cache folder; later
    asks only look it up. The tool's exit status is not its concern."""
    log = tmp_path / "runs"
    tool = tmp_path / "yowasp-fake"
    tool.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexit 3\n")
    tool.chmod(0o755)
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(toolchain, "_WARM", set())
    assert toolchain.warm_yowasp("yowasp-fake") == str(tool)
    assert toolchain.warm_yowasp("yowasp-fake") == str(tool)
    assert toolchain.yowasp("fake") == str(tool)
    assert log.read_text() == "-V\n"
    assert (tmp_path / "cache" / "t3hw-first-run.lock").is_file()
