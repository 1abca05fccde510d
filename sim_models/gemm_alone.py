# SPDX-License-Identifier: Apache-2.0
"""The co-simulation's GEMM alone: one GPU's compute units (:class:`~sim_models.gpu.GpuCores`)
straight on its DRAM model, no engine and no communication.

The co-simulation runs the GEMM only fused with its collective; this gives the time the
same GPU and DRAM models need for the GEMM by themselves, the baseline against which the
fused run's ``gemm_cycles`` show what communication costs the GEMM (``docs/cosim.md``, "A
larger FC layer"). Each cycle the DRAM takes at most one request, as at the engine's
``dram`` port: the next load or the next store burst, in turn while both wait (the
arbiter's pointer inside the compute class); responses go back one per cycle.
``updates=True`` sends the stores as near-memory updates, as the fused run's later stages
do. Python, cycle by cycle: about 30 s per million cycles.
"""

import random

from .collective import Plan
from .cosim import gpu_cores, gpu_dram
from t3hw.spec.kinds import WriteSource
from t3hw.spec.layouts import MemOp


__all__ = ["gemm_alone"]


def gemm_alone(cfg, *, gpu=0, updates=False):
    """Cycles GPU ``gpu`` of scenario ``cfg`` (a :class:`~sim_models.cosim.CosimConfig`)
    takes for its GEMM alone on its DRAM (the co-simulation's own: ``cfg.memory``, and its
    ``dram_stall`` refusals if set), until its last tile retired and its last store was
    taken: ``{"cycles", "loads", "stores"}``."""
    if not 0 <= gpu < cfg.gpus:
        raise ValueError(f"gpu must be in [0, {cfg.gpus - 1}], not {gpu!r}")
    plan = Plan(cfg)
    g, d = gpu_cores(cfg, plan, gpu), gpu_dram(cfg, plan, random.Random(cfg.seed))
    store_op = (MemOp.UPDATE if updates else MemOp.STORE).value
    compute = WriteSource.COMPUTE.value
    cycle, stores, store_next = 0, 0, False
    g.dispatch(0)
    while not g.done:
        if d.ready():
            load = g.load()
            if g.stores and (store_next or load is None):
                addr, _, data = g.stores.popleft()
                d.take(cycle, {"op": store_op, "addr": addr, "bytes": data.nbytes,
                               "source": compute, "tag": 0}, data)
                stores, store_next = stores + 1, False
            elif load is not None:
                k, f = load
                d.take(cycle, {"op": MemOp.READ.value, "addr": f["addr"], "bytes": f["bytes"],
                               "source": compute, "tag": f["tag"]}, None)
                g.issued(k, cycle)
                store_next = True
        d.serve(cycle)
        if d.responses:
            g.returned(d.responses.popleft()["tag"], cycle)
        g.retire(cycle)
        g.dispatch(cycle)
        cycle += 1
    return {"cycles": cycle, "loads": g.loads, "stores": stores}
