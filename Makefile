# Two commands matter on a fresh machine: `make serve` and `make test`.
# Both create the virtual environment and start the local CPU judges as needed.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CPU_JUDGE := bash deploy/cpu-judge/cpujudge.sh
# make serve's judges (pool deploy/cpu-judge/judges.serve.yaml); the tests use the defaults.
SERVE_JUDGES := qwen-1.5b gemma

.PHONY: install judges serve-judges serve test lint format bench stop-judges schema docs

$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml
	@echo "[make] creating $(VENV) with rewardsvc, its test and docs tools and the client package"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,embeddings,eval,docs]' -e ./clients/python
	@touch $@

install: $(VENV)/.installed

judges:
	$(CPU_JUDGE) start
	$(CPU_JUDGE) wait

serve-judges:
	$(CPU_JUDGE) start $(SERVE_JUDGES)
	$(CPU_JUDGE) wait 900 $(SERVE_JUDGES)

serve: install serve-judges
	$(VENV)/bin/rewardsvc serve

test: install judges
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	$(VENV)/bin/rewardsvc validate rubrics
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	$(PY) -m pytest -ra --durations=20

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The docs site (mkdocs.yml) into site/; the reference pages are generated from the code.
docs: install
	$(VENV)/bin/mkdocs build --strict

format: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

schema: install
	$(VENV)/bin/rewardsvc schema > rubrics/schema/rubric.schema.json
	$(VENV)/bin/rewardsvc schema --pool > rubrics/schema/judges.schema.json
	$(VENV)/bin/rewardsvc schema --recipe > rubrics/schema/recipe.schema.json
	$(VENV)/bin/rewardsvc schema --routing > rubrics/schema/routing.schema.json

$(VENV)/.bench-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[bench]'
	@touch $@

# Benchmarks on the real CPU judge, written to bench/results/ (~20 min on 2 cores);
# `make bench BENCH_ARGS=--quick` for a short development run into bench/results/quick/.
# (Run by hand, every bench writes to the git-ignored bench/results/local/ instead.)
bench: $(VENV)/.bench-installed judges
	$(PY) -m bench.run --out bench/results $(BENCH_ARGS)

stop-judges:
	$(CPU_JUDGE) stop
