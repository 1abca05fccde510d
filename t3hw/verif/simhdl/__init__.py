# SPDX-License-Identifier: Apache-2.0
"""Simulation-only HDL: the co-simulation's per-cycle mechanics generated with Amaranth beside
the system top; never part of rtl/."""
