# SPDX-License-Identifier: Apache-2.0
"""The specification every layer derives from: parameters, layouts, register map, contract.

* :mod:`.params`: :class:`~t3hw.spec.params.EngineParams`, every parameter with its range;
* :mod:`.layouts`: every stream payload, descriptor and enum (``amaranth.lib.data``);
* :mod:`.regmap`: the register map, from which the register block, the driver, the C header
  and ``docs/registers.md`` are derived;
* :mod:`.contract`: the latencies, reset values and bounds the blocks promise and the models,
  driver and testbenches rely on.

This layer imports only Amaranth and the standard library.
"""
