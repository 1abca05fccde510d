# SPDX-License-Identifier: Apache-2.0
# Every target creates .venv from the pinned versions in pyproject.toml when it is missing.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
T3HW   := $(VENV)/bin/t3hw
STAMP  := $(VENV)/.installed
SUDO   := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: setup demo test verilog check-rtl lint bench paper formal synth bitstream check-install clean

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
# per file, and no two workers may build the same design at once).
test: $(STAMP) check-rtl lint
	$(PY) -m pytest -n 2 --dist loadfile

verilog: $(STAMP)
	$(T3HW) generate --out rtl --docs docs/registers.md

check-rtl: $(STAMP)
	$(T3HW) check-rtl --rtl rtl --docs docs/registers.md

lint: $(STAMP)
	$(T3HW) lint --rtl rtl

bench: $(STAMP)
	$(T3HW) bench --json bench/results.json

formal: $(STAMP)
	$(T3HW) formal tracker queue_depth1 queue_depth3 merge arbiter dma

synth: $(STAMP)
	$(T3HW) synth --json synth/results.json --docs docs/synthesis.md

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
