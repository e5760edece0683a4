# Developer entry points. `make setup` once, then `make test` / `make demo`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
RUFF := $(VENV)/bin/ruff
MYPY := $(VENV)/bin/mypy

# Run-time environment shared by test and demo (see README "Environment").
RUN_ENV := ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST RMW_IMPLEMENTATION=rmw_fastrtps_cpp \
	AMENT_PREFIX_PATH=$(CURDIR)/$(VENV) MUJOCO_GL=egl PYTHONUNBUFFERED=1

# bench/ and training/ may be empty or absent: lint only folders that exist.
LINT_DIRS := $(wildcard src tests bench training scripts)

.PHONY: setup lint type docs-build docs test demo demo-hard bench format clean mjlab-parity doc-tables

setup:
	bash scripts/setup.sh

# The training workspace's layers: import-linter's contracts (pyproject.toml [tool.importlinter]: the library never
# imports a task, the runtime never imports training) and ruff's PLC2701 (training takes no private name of src/).
lint:
	$(RUFF) check $(LINT_DIRS)
	$(RUFF) format --check $(LINT_DIRS)
	$(VENV)/bin/lint-imports
	$(RUFF) check --preview --select PLC2701 training

type:
	$(MYPY) src/parkour_core

# The documentation site (docs/, mkdocs.yml): --strict, so a broken link or a page left out of the nav fails.
docs-build:
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs:  # serves the site on localhost:8000, rebuilt on every edit
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

test: lint type docs-build
	$(RUN_ENV) $(PY) -m pytest

# The product working: the step-up student chosen by its test-seed eval, from the gantry, over the heights it
# clears (sim/scenes/demo_course.yaml: 5 and 10 cm), a turn and a stop; then the stand pose, the gantry hooked back
# on and damping, on the operator's commands. The report (runs/demo/report.json "boxes", and the last lines printed)
# says what became of each box.
# bench/demo/run.py repeats exactly these arguments (it reads them from here).
DEMO_ARGS := --bundle student_step_lib_seed1 --scene demo_course --script sim/scripts/demo.yaml --duration 33
demo:
	$(RUN_ENV) $(VENV)/bin/parkour sim $(DEMO_ARGS) --out runs/demo

# Where the student fails: the box course with a 20 cm platform at 1 m/s, and what the supervisor does about it.
demo-hard:
	$(RUN_ENV) $(VENV)/bin/parkour sim --bundle student_step_lib_seed1 --scene box_course \
		--script sim/scripts/box_course_straight.yaml --duration 30 --out runs/demo-hard

# Benchmarks write JSON (and PNG) to bench/results/; see bench/README.md. Not part of `make test`:
# timings never decide pass/fail.
bench:
	$(RUN_ENV) $(PY) bench/depth/capture.py --out bench/results/depth_capture.json
	$(RUN_ENV) $(PY) bench/depth/sim_camera.py --out bench/results/depth_sim_camera.json
	$(RUN_ENV) $(PY) bench/policy/run.py --out bench/results
	$(RUN_ENV) $(PY) bench/policy/turns.py --out bench/results/policy_turns.json
	$(RUN_ENV) $(PY) bench/policy/swap.py --out bench/results/policy_swap.json
	$(RUN_ENV) $(PY) bench/bags/replay.py --out bench/results/bags_replay.json
	$(RUN_ENV) $(PY) bench/bags/closed_loop.py --out bench/results/replay_closed_loop.json
	$(RUN_ENV) $(PY) bench/mm/query.py --out bench/results/mm_query.json
	bash bench/holosoma/setup.sh
	$(RUN_ENV) $(PY) bench/holosoma/run.py --out bench/results/holosoma_loop.json
	$(RUN_ENV) $(PY) bench/dds/lowstate.py --out bench/results/dds_lowstate.json
	$(RUN_ENV) $(PY) bench/graph/run.py --out bench/results/graph_sim.json
	$(RUN_ENV) $(PY) bench/graph/robot.py --out bench/results/graph_robot.json
	$(PY) bench/summary.py

# The measured tables of README.md and docs/ from their JSON result files (scripts/doc_tables.py; --check in the tests).
doc-tables:
	$(PY) scripts/doc_tables.py

format:
	$(RUFF) format $(LINT_DIRS)
	$(RUFF) check --fix $(LINT_DIRS)

clean:
	rm -rf $(VENV) runs build install log .mypy_cache .ruff_cache .pytest_cache
	find src tests -name __pycache__ -type d -prune -exec rm -rf {} +
	find src -maxdepth 2 -name '*.egg-info' -type d -prune -exec rm -rf {} +

mjlab-parity:  # optional: an mjlab-trained policy imported and run as mjlab runs it; creates .venv-mjlab (about 2.3 GB)
	bash training/backends/mjlab/setup.sh && $(RUN_ENV) $(PY) -m pytest -q training/backends/mjlab
