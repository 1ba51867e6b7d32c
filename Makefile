# c4table: build, query and test Connect-4 lookup tables.
#   make table BOARD=5x4      forward + backward + merge into tables/5x4/
#   make table BOARD=7x6 ROOT=MOVES   the rooted table of every position reachable from MOVES,
#                             into tables/7x6_root-MOVES/connect4_7x6_root-MOVES.dat
#   make table BOARD=6x5 FORMAT=c4z   the table written straight into connect4_6x5.c4z (no .dat)
#   make forward BOARD=5x4    the forward pass alone
#   make backward BOARD=5x4   the backward pass alone (after forward)
#   make merge BOARD=5x4      the final merge alone (after backward)
#   make test                 the whole suite, both tiers (what CI runs; about 15 minutes on 2 cores),
#                             then its 25 slowest tests
#   make check                the fast tier, pytest -m "not slow" (about 5 minutes on 2 cores)
#   Both run on JOBS=2 processes (pytest-xdist; each test file on one of them).
# Everything runs from a local virtualenv (.venv), created on first use: building needs the
# package alone (pip install -e .); the tests add the test and bench extras.

BOARD   ?= 5x4
MEMORY  ?= 4GiB
PYTHON  ?= python3
VENV    ?= .venv
ROOT    ?=
JOBS    ?= 2
FORMAT  ?= dat
OUT     ?= tables/$(BOARD)$(if $(ROOT),_root-$(ROOT))
C4      := $(VENV)/bin/c4table
# pip, without setuptools' boxed "Editable installation" warning (folders named like the package
# may shadow it): tools/diag/pin_package_path.py, run after the install, deals with that.
PIP     := PYTHONWARNINGS="ignore:Editable installation" $(VENV)/bin/pip
STAMP   := $(VENV)/.installed
TESTSTAMP := $(VENV)/.installed-test
ARGS    := $(BOARD) --out $(OUT) --memory $(MEMORY) $(if $(WORKERS),--workers $(WORKERS)) $(if $(ROOT),--root $(ROOT))

.PHONY: install install-test table forward backward merge verify test check clean

install: $(STAMP)

install-test: $(TESTSTAMP)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet -e .
	$(VENV)/bin/python -m tools.diag.pin_package_path
	touch $(STAMP)

$(TESTSTAMP): $(STAMP)
	$(PIP) install --quiet -e '.[test,bench]'
	touch $(TESTSTAMP)

table: $(STAMP)
	$(C4) build $(ARGS) --format $(FORMAT)

forward: $(STAMP)
	$(C4) forward $(ARGS)

backward: $(STAMP)
	$(C4) backward $(ARGS)

merge: $(STAMP)
	$(C4) merge $(ARGS) --format $(FORMAT)

verify: $(STAMP)
	$(C4) verify $(OUT)/connect4_$(BOARD)$(if $(ROOT),_root-$(ROOT)).$(FORMAT)

test: $(TESTSTAMP)
	$(VENV)/bin/python -m pytest -q -n $(JOBS) --dist loadfile --durations=25

check: $(TESTSTAMP)
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(JOBS) --dist loadfile -m "not slow"

clean:
	rm -rf tables
