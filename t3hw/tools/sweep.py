# SPDX-License-Identifier: Apache-2.0
"""``t3hw sweep``: a grid of co-simulations spread over Dask workers, results in one JSON.

A sweep is the cross product of lists of :class:`~sim_models.cosim.CosimConfig` fields
(``--gpus 2,4 --policy t3_mca,t3_mca_rr --memory fixed,hbm``: eight co-simulations). Each
point is one :func:`t3hw.tools.cosim.run` on a worker; the results come back to the client
and are written to one JSON file, in grid order, with the sweep's own figures (workers,
wall time, each point's worker and seconds).

Where it runs
-------------
* By default on this machine: a :class:`distributed.LocalCluster` of ``--workers`` worker
  processes (default: the CPU count), one thread each, no dashboard.
* On a cluster: ``--scheduler tcp://HOST:8786`` connects to a running Dask scheduler and
  uses its workers (``dask scheduler`` on one machine, ``dask worker tcp://HOST:8786
  --nthreads 1`` on each of the others, every machine with this kit installed; or any
  deployment Dask supports: SSH, SLURM through dask-jobqueue, Kubernetes). A worker builds
  the Verilated system top it needs under its own ``T3HW_BUILD`` (``./build`` of its working
  directory); a build folder shared by several workers (the same machine, or a network file
  system) is built once, under a file lock (:func:`t3hw.tools.cosim.build`).

Why Dask and not Ray: both schedule Python functions on a pool of processes across
machines; Dask's scheduler and workers are pure-Python wheels (``dask``, ``distributed``)
that install with the kit's other pinned dependencies on any Python this kit supports, start
with one command each, and run on the batch systems HPC sites have (dask-jobqueue). A
co-simulation is one coarse task (seconds to minutes, a subprocess for the simulator), so
Ray's low-latency actor scheduling and object store buy nothing here, and its larger
platform wheels would be a dependency the kit does not otherwise need.
"""

import dataclasses
import itertools
import json
import os
import sys
import time
from pathlib import Path

from sim_models.cosim import COLLECTIVES, MEMORIES, POLICIES, CosimConfig
from sim_models.workloads import MODELS, SUBLAYERS

from . import cosim
from .errors import CliError
from .progress import Progress


__all__ = ["GRID_FIELDS", "grid", "hardware", "run_sweep", "add_arguments", "cmd"]

#: The :class:`CosimConfig` fields a sweep can list, with the type of one value.
GRID_FIELDS = {"gpus": int, "model": str, "tp": int, "sublayer": str, "tokens": int,
               "hidden": int, "policy": str, "collective": str, "memory": str,
               "link_latency": int, "seed": int}


def grid(base=None, **lists):
    """The :class:`CosimConfig` of every point of the cross product of ``lists`` (field name
    to a list of values), in row-major order over the fields in :data:`GRID_FIELDS` order
    (whatever the order of ``lists``): the last of them varies fastest. Every other
    field is ``base``'s (default: ``CosimConfig()``'s), the engines' parameters and the
    link included. Raises ValueError (the field's own message) for a bad value."""
    unknown = sorted(set(lists) - set(GRID_FIELDS))
    if unknown:
        raise ValueError(f"fields {unknown} cannot be swept; sweepable: {sorted(GRID_FIELDS)}")
    names = [n for n in GRID_FIELDS if n in lists]
    for n in names:
        if not lists[n]:
            raise ValueError(f"{n} needs at least one value")
    base = base if base is not None else CosimConfig()
    return [dataclasses.replace(base, **dict(zip(names, values)))
            for values in itertools.product(*(lists[n] for n in names))]


def _fast(cfg, mode):
    return cosim.choose_mode(cfg, mode) == "fast"


def hardware(cfg, mode="auto", pgo=False, symmetric=False):
    """The build folder a point of ``cfg`` runs on (:func:`t3hw.tools.cosim_fast.build_dir`,
    profile-guided with ``pgo``, or :func:`t3hw.tools.cosim.build_dir`): points with the
    same one share a build; ``symmetric`` points run on the top of one GPU."""
    from . import cosim_fast
    if _fast(cfg, mode):
        return str(cosim_fast.build_dir(cfg, parts=cfg.gpus if symmetric else 1, pgo=pgo))
    return str(cosim.build_dir(cfg))


def _build(cfg_dict, mode, pgo, symmetric=False):
    """Build the simulation one point of ``cfg_dict`` runs on, on a worker."""
    from . import cosim_fast
    cfg = CosimConfig.from_dict(cfg_dict)
    if _fast(cfg, mode):
        cosim_fast.build(cfg, pgo=pgo, parts=cfg.gpus if symmetric else 1,
                         symmetric=symmetric)
    else:
        cosim.build(cfg)


def _point(cfg_dict, model, mode, pgo, symmetric=False):
    """One sweep point on a worker: the co-simulation, and where and how long it ran."""
    from distributed import get_worker
    t0 = time.perf_counter()
    cfg = CosimConfig.from_dict(cfg_dict)
    fast = _fast(cfg, mode)
    r = cosim.run(cfg, model=model, mode=mode, pgo=pgo and fast, symmetric=symmetric and fast)
    r["sweep_point"] = {"worker": get_worker().address, "seconds": time.perf_counter() - t0}
    return r


def run_sweep(configs, *, scheduler=None, workers=None, json_path=None, progress=False,
              model=True, mode="auto", pgo=False, symmetric=False):
    """Co-simulate every :class:`CosimConfig` of ``configs`` on Dask workers.

    ``scheduler`` is a Dask scheduler's address (``tcp://HOST:8786``); None starts a local
    cluster of ``workers`` processes (default: the CPU count) for the sweep. ``model`` also
    runs the performance model beside each point (its ``cycles.model`` and ``gap``).
    ``mode`` is :func:`t3hw.tools.cosim.run`'s (fast where a point allows it, by default).
    ``pgo`` runs the fast points on profile-guided builds (:mod:`t3hw.tools.pgo`);
    ``symmetric`` runs each fast point's GPU 0 alone (:func:`t3hw.tools.cosim.run`).

    When the points run on more than one simulation build (:func:`hardware`) and there is
    more than one worker, the builds are made first, one per worker at the same time; each
    worker then finds its point's build made (on a shared file system; else it builds it).

    Returns (and writes to ``json_path``) ``{"sweep": {...}, "points": [result, ...]}``, the
    results in the order of ``configs`` (``sweep.builds``: how many distinct builds they
    ran on); a point whose checks failed carries its ``failure``, as
    :func:`t3hw.tools.cosim.run` reports it.
    """
    from distributed import Client, LocalCluster, as_completed
    configs = list(configs)
    if not configs:
        raise ValueError("configs must not be empty")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1, not {workers!r}")
    t0 = time.perf_counter()
    cluster = None
    if scheduler is None:
        n = workers or os.cpu_count() or 1
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(scheduler)
    try:
        n_workers = len(client.scheduler_info()["workers"])
        # Each distinct simulation is built once, all at the same time, before the points:
        # else the first points of every build run one after the other, each waiting on its
        # build's lock while the other workers wait on the same lock.
        builds = {}
        for cfg in configs:
            builds.setdefault(hardware(cfg, mode, pgo, symmetric), cfg)
        if len(builds) > 1 and n_workers > 1:
            client.gather([client.submit(_build, cfg.to_dict(), mode, pgo, symmetric,
                                         pure=False) for cfg in builds.values()])
        futures = {client.submit(_point, cfg.to_dict(), model, mode, pgo, symmetric,
                                 pure=False): i for i, cfg in enumerate(configs)}
        results = [None] * len(configs)
        bar = Progress(len(configs), progress)
        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            bar.step(cosim.result_line(results[i]))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    out = {"sweep": {"points": len(configs), "workers": n_workers, "builds": len(builds),
                     "scheduler": scheduler or "local", "wall_s": time.perf_counter() - t0},
           "points": results}
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(out, indent=1) + "\n")
    return out


def _list(kind, choices=None):
    def parse(text):
        values = [v.strip() for v in text.split(",") if v.strip()]
        if not values:
            raise ValueError("no value")
        if choices is not None:
            bad = [v for v in values if v not in choices]
            if bad:
                raise ValueError(f"{bad[0]!r} is not one of {', '.join(choices)}")
        return [kind(v) for v in values]
    parse.__name__ = "comma-separated list"
    return parse


def add_arguments(p):
    """The options of ``t3hw sweep``: comma-separated values of the co-simulation's fields."""
    lists = {"model": list(MODELS), "sublayer": list(SUBLAYERS), "policy": list(POLICIES),
             "collective": list(COLLECTIVES), "memory": list(MEMORIES)}
    for name, kind in GRID_FIELDS.items():
        option = name.replace("_", "-")
        p.add_argument(f"--{option}", type=_list(kind, lists.get(name)), metavar="V[,V...]",
                       help=f"values of the co-simulation's --{option} (default: its own)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a running Dask scheduler, tcp://HOST:8786 (default: a local cluster)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="worker processes of the local cluster (default: the CPU count)")
    p.add_argument("--exact", action="store_true",
                   help="every point in the exact mode (t3hw cosim --exact)")
    p.add_argument("--pgo", action="store_true",
                   help="run the fast points on profile-guided builds (t3hw cosim --pgo)")
    p.add_argument("--symmetric", action="store_true",
                   help="run each point's GPU 0 alone, its neighbour supplied by the ring's "
                        "symmetry (t3hw cosim --symmetric)")
    p.add_argument("--no-model", action="store_true",
                   help="skip the performance model beside each point")
    p.add_argument("--json", required=True, metavar="FILE", help="the results file")


def cmd(args):
    """``t3hw sweep``: run the grid, print one line per point; a failed point is an error."""
    lists = {n: getattr(args, n) for n in GRID_FIELDS if getattr(args, n) is not None}
    try:
        configs = grid(**lists)
    except ValueError as exc:
        raise cosim.config_error(exc, GRID_FIELDS) from None
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers must be at least 1, not {args.workers}")
    if args.pgo and args.exact:
        raise CliError("--pgo builds the fast mode's top: leave it out with --exact")
    if args.symmetric:
        if args.exact:
            raise CliError("--symmetric runs one GPU of the fast mode's ring: leave it out "
                           "with --exact")
        for cfg in configs:
            try:
                cosim.check_symmetric(cfg)
            except ValueError as exc:
                raise CliError(f"--symmetric: {exc}") from None
    out = run_sweep(configs, scheduler=args.scheduler, workers=args.workers,
                    json_path=args.json, progress=sys.stderr.isatty(), model=not args.no_model,
                    mode="exact" if args.exact else "auto", pgo=args.pgo,
                    symmetric=args.symmetric)
    for r in out["points"]:
        print(cosim.result_line(r))
    s = out["sweep"]
    print(f"{s['points']} points on {s['workers']} workers ({s['scheduler']}) in "
          f"{s['wall_s']:.0f} s; written: {args.json}")
    failed = [r for r in out["points"] if r["failure"] or not r["numerics_ok"]]
    if failed:
        raise CliError(f"{len(failed)} of {len(out['points'])} points failed their checks; "
                       f"first: {cosim.result_line(failed[0])}")
