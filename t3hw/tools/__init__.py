# SPDX-License-Identifier: Apache-2.0
"""The tools around the RTL, one module each behind a ``t3hw`` subcommand: Verilog generation
(:mod:`.generate`), the toolchain finder (:mod:`.toolchain`), cocotb builds and runs
(:mod:`.simulate`), co-simulation (:mod:`.cosim`, :mod:`.demo`), waves (:mod:`.waves`),
formal proofs (:mod:`.formal`), synthesis (:mod:`.synth`), the board build (:mod:`.board`)
and benchmarks (:mod:`.bench`). Everything below may be imported from here; nothing here is
imported from below."""
