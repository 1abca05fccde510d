# SPDX-License-Identifier: Apache-2.0
"""The synthesizable hardware: one module per block, its formal properties beside it.

Blocks: :mod:`.tracker` (tracker table and trigger logic), :mod:`.dma` (descriptor table,
ready queue, 2-D walker), :mod:`.addrmap` (producer address map), :mod:`.csr` (register
block), :mod:`.arbiter` (memory-controller arbiter), :mod:`.merge` and :mod:`.queue` (stream
parts), :mod:`.engine` (one GPU's engine) and :mod:`.system` (N engines in one top, for
co-simulation). :mod:`.formal` is the property library their ``formal_spec`` functions use.

This layer imports only Amaranth and :mod:`t3hw.spec`.
"""
