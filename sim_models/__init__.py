# SPDX-License-Identifier: Apache-2.0
"""Python behavioral models: reference engine blocks, GPU cores, NMC DRAM, network."""
