# c4table: build, query and test Connect-4 lookup tables.
#   make table BOARD=5x4      forward + backward + merge into tables/5x4/
#   make table BOARD=7x6 ROOT=MOVES   the rooted table of every position reachable from MOVES,
#                             into tables/7x6_root-MOVES/connect4_7x6_root-MOVES.dat
#   make forward BOARD=5x4    the forward pass alone
#   make backward BOARD=5x4   the backward pass alone (after forward)
#   make merge BOARD=5x4      the final merge alone (after backward)
#   make test                 the test suite (what CI runs)
# Everything runs from a local virtualenv (.venv), created on first use.

BOARD   ?= 5x4
MEMORY  ?= 4GiB
PYTHON  ?= python3
VENV    ?= .venv
ROOT    ?=
OUT     ?= tables/$(BOARD)$(if $(ROOT),_root-$(ROOT))
C4      := $(VENV)/bin/c4table
STAMP   := $(VENV)/.installed
ARGS    := $(BOARD) --out $(OUT) --memory $(MEMORY) $(if $(WORKERS),--workers $(WORKERS)) $(if $(ROOT),--root $(ROOT))

.PHONY: install table forward backward merge verify lookup test clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test,bench]'
	$(VENV)/bin/python tools/pin_package_path.py
	touch $(STAMP)

table: $(STAMP)
	$(C4) build $(ARGS)

forward: $(STAMP)
	$(C4) forward $(ARGS)

backward: $(STAMP)
	$(C4) backward $(ARGS)

merge: $(STAMP)
	$(C4) merge $(ARGS)

verify: $(STAMP)
	$(C4) verify $(OUT)/connect4_$(BOARD)$(if $(ROOT),_root-$(ROOT)).dat

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q

clean:
	rm -rf tables
