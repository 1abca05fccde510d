# SPDX-License-Identifier: Apache-2.0
"""Verification: the environments that drive each block's streams and score them against
its reference model (simulator-agnostic: :mod:`.env` and one module per block,
:mod:`.addrmap_env`, :mod:`.arbiter_env`, :mod:`.csr_env`, :mod:`.dma_env`,
:mod:`.engine_env`), the scenarios (:mod:`.arbiter_directed`, :mod:`.csr_scenarios`,
:mod:`.dma_scenarios`, :mod:`.cosim_scenarios`, ...), the glue that runs them under cocotb
(:mod:`.cocotb_tb`) and amaranth.sim (:mod:`.amsim`), and the co-simulation testbench
(:mod:`.cosim_tb`). Builds on :mod:`t3hw.spec`, :mod:`t3hw.hw` (amaranth.sim only),
:mod:`t3hw.sw` and :mod:`sim_models`."""
