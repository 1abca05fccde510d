# SPDX-License-Identifier: Apache-2.0
"""The tools' one progress bar: a line on stderr, redrawn in place.

:class:`Progress` is drawn only when enabled and stderr is a terminal (never into a log).
``t3hw paper`` steps it once per workload (:meth:`Progress.step`); ``t3hw cosim`` feeds it
from the testbench's progress file, polled in a thread (:meth:`Progress.follow`).
"""

import json
import sys
import threading
import time
from pathlib import Path


__all__ = ["Progress"]


class Progress:
    """A one-line progress bar on stderr.

    Parameters
    ----------
    total : int or None
        Steps to the end, for :meth:`step`.
    enabled : bool
        Draw at all (it is drawn only if stderr is also a terminal).
    """

    WIDTH = 30

    def __init__(self, total=None, enabled=True):
        self.total, self.n, self.t0 = total, 0, time.monotonic()
        self.enabled = enabled and sys.stderr.isatty()
        self.drawn = False

    def show(self, frac, text, label=""):
        """Draw ``frac`` (0 .. 1) of the bar, then ``text``, the time so far and ``label``."""
        if not self.enabled:
            return
        fill = int(self.WIDTH * min(1.0, max(0.0, frac)))
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (self.WIDTH - fill)}] {text} "
                         f"{time.monotonic() - self.t0:5.1f}s {label:<28}")
        sys.stderr.flush()
        self.drawn = True

    def step(self, label=""):
        """One more of ``total`` steps done (``label``: the one just done); the line ends
        after the last."""
        self.n += 1
        self.show(self.n / self.total, f"{self.n}/{self.total}", label)
        if self.n == self.total:
            self.close()

    def close(self):
        """End the line, if one was drawn."""
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.drawn = False

    def follow(self, path, read, every=0.5):
        """A context manager that polls the JSON file ``path`` every ``every`` seconds in a
        thread while its body runs, and draws ``read(state) -> (frac, text)`` of it (a file
        that is missing or half written is skipped); the line ends on exit."""
        return _Follow(self, Path(path), read, every)


class _Follow:
    def __init__(self, bar, path, read, every):
        self.bar, self.path, self.read, self.every = bar, path, read, every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        if self.bar.enabled:
            self.thread.start()
        return self.bar

    def __exit__(self, *exc):
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        self.bar.close()

    def _loop(self):
        while not self.stop.wait(self.every):
            try:
                state = json.loads(self.path.read_text())
            except (OSError, ValueError):
                continue
            self.bar.show(*self.read(state))
