# SPDX-License-Identifier: Apache-2.0
"""The errors the kit's tools report to a user as one line, never as a traceback.

:exc:`CliError` is a mistake the user can fix (an option, a path); :exc:`ToolError` a tool
that is missing or failed. ``t3hw`` prints either as ``t3hw CMD: error: MESSAGE`` and exits
with status 2; a message says what to fix.
"""

__all__ = ["CliError", "ToolError"]


class CliError(Exception):
    """An error to report as one line, without a traceback."""


class ToolError(CliError, RuntimeError):
    """A tool is missing or failed; the message says which and what to do."""
