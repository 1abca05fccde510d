# SPDX-License-Identifier: Apache-2.0
# Every target creates .venv from the pinned versions in pyproject.toml when it is missing.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
T3HW   := $(VENV)/bin/t3hw
STAMP  := $(VENV)/.installed
SUDO   := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: setup demo test test-long verilog check-rtl lint bench paper paper-rtl paper-rtl-full sweep formal synth synth-scale bitstream check-install clean help

setup: $(STAMP)

$(STAMP): pyproject.toml
	@command -v iverilog >/dev/null 2>&1 || { echo "installing Icarus Verilog (Debian iverilog) for the second-simulator runs"; \
	  $(SUDO) apt-get install -y -qq iverilog >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq iverilog; }; }
	@missing=$$(for p in liblz4-dev gtkwave xvfb xauth ghostscript; do dpkg -s $$p >/dev/null 2>&1 || printf "%s " $$p; done); \
	  test -z "$$missing" || { echo "installing Debian $$missing (FST waves: liblz4-dev; the GTKWave screenshot test: the others)"; \
	  $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; }; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	touch $(STAMP)

demo: $(STAMP) verilog
	$(T3HW) demo --out out/demo

# Two workers, one per core; each test file runs whole on one worker (build folders are
# per file, and no two workers may build the same design at once), but for the groups that
# conftest.py names: the formal proofs one by one, the co-simulation per ring size.
test: $(STAMP) check-rtl lint
	$(PY) -m pytest -n 2 --dist loadfile

# The runs `make test` leaves out (the `long` marker, pyproject.toml): the 8-engine
# co-simulation, Icarus at every parameter set, the deepest formal bounds, the board's place
# and route. About half an hour on 2 cores.
test-long: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile -m long

# rtl/: Verilog, manifest.json, the register map (t3hw_regs.rdl, t3hw_regs.h,
# t3hw_regs_peakrdl.h), payloads.md, files.f and the FuseSoC core t3hw.core; docs/registers.md.
verilog: $(STAMP)
	$(T3HW) generate --out rtl --docs docs/registers.md

check-rtl: $(STAMP)
	$(T3HW) check-rtl --rtl rtl --docs docs/registers.md

lint: $(STAMP)
	$(T3HW) lint --rtl rtl

bench: $(STAMP)
	$(T3HW) bench --json bench/results.json

formal: $(STAMP)
	$(T3HW) formal tracker queue_depth1 queue_depth3 queue_depth4 queue_memory4 merge arbiter dma

synth: $(STAMP)
	$(T3HW) synth --json synth/results.json --docs docs/synthesis.md

# The scaling sweep (docs/synthesis.md, "Scaling"): every axis point of every block it
# changes and of the engine, seed 1, one point at a time; hours, and not part of `make test`.
# Rerunning it reuses every point already measured on the same Verilog and tools.
synth-scale: $(STAMP)
	$(T3HW) synth-scale --json synth/scaling.json --seed 1 --pnr-timeout 3600 --docs docs/synthesis.md --plot docs/img/synth_scaling.png

bitstream: $(STAMP)
	$(T3HW) bitstream --out build/ulx3s

# A plain `pip install .` into a fresh venv, used from a folder outside the clone: generate,
# lint, cosim --waves and synth (tests/test_install.py; several minutes).
check-install: $(STAMP)
	$(PY) -m pytest -m install tests/test_install.py -s

clean:
	rm -rf build out .pytest_cache

paper: $(STAMP)
	$(T3HW) paper --json bench/paper.json --plot docs/img --sweep

# The paper's 16 Mega-GPT-2 / T-NLG sub-layers co-simulated on generated RTL (rings of 8 and
# 16 engines, T3 and T3-MCA), beside the model on the same hardware (docs/paper.md, "On the RTL").
paper-rtl: $(STAMP)
	$(T3HW) paper --rtl --json bench/paper_rtl.json --plot docs/img

# The same at the paper's 8192 tokens: each ring's GPU 0 alone, its neighbour supplied by the
# ring's symmetry, on engines of 1024 tracker entries and descriptors, profile-guided builds
# (docs/paper.md, "At the paper's token counts").
paper-rtl-full: $(STAMP)
	$(T3HW) paper --rtl --full --pgo --json bench/paper_rtl_full.json --plot docs/img

# The four arbitration policies on the HBM2 DRAM at the demo's size, on a local Dask cluster
# (one worker per core; docs/cosim.md, "Sweeps").
sweep: $(STAMP)
	$(T3HW) sweep --gpus 4 --memory hbm --policy round_robin,compute_first,t3_mca,t3_mca_rr --json bench/sweep.json

help:
	@echo "make setup          create .venv from the pinned versions in pyproject.toml (every target does it first)"
	@echo "make demo           make verilog, then a 4-GPU fused GEMM + ring reduce-scatter co-simulated on generated RTL"
	@echo "make test           make check-rtl, make lint, then pytest (Python tests, FuseSoC lint, cocotb regressions)"
	@echo "make test-long      the runs make test leaves out: 8-engine co-simulation, Icarus at every parameter set, deepest formal bounds, board place and route"
	@echo "make verilog        regenerate rtl/ (Verilog, manifest, SystemRDL, C headers, payloads.md, files.f, t3hw.core) and docs/registers.md"
	@echo "make check-rtl      regenerate into a temporary folder; fail on any byte of difference from rtl/ or docs/registers.md"
	@echo "make lint           verilator --lint-only -Wall on rtl/ with the waivers of t3hw/tools/lint_waivers.vlt"
	@echo "make bench          co-simulation throughput and Verilator build time into bench/results.json"
	@echo "make paper          the performance model over the paper's table, with plots and the sweep"
	@echo "make paper-rtl      the paper's 16 TP-8/16 sub-layers co-simulated on generated RTL beside the model"
	@echo "make paper-rtl-full the same at the paper's 8192 tokens, one GPU of each symmetric ring (about 20 minutes)"
	@echo "make sweep          the four arbitration policies co-simulated on the HBM2 DRAM, on a local Dask cluster (bench/sweep.json)"
	@echo "make formal         the formal proofs alone (docs/formal.md)"
	@echo "make synth          Yosys/nextpnr utilisation and Fmax of every block into synth/results.json and docs/synthesis.md"
	@echo "make synth-scale    utilisation, Fmax and growth law of the blocks and the engine as regions, tracker entries, descriptors and address width grow (hours)"
	@echo "make bitstream      the engine on a ULX3S-85F (docs/fpga.md)"
	@echo "make check-install  pip install . into a fresh venv and use the kit from outside the clone (several minutes)"
	@echo "make clean          remove build/, out/ and .pytest_cache"
	@echo "make help           this list"
