# Two entry points for a newcomer: `make conformance` (install, then the main job) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin

## The four conformance runs of CI (ci-conformance); each writes its own reports. CI_JOBS of
## them run at once in `make ci-conformance`: 1 by default, as side by side three real-Dynamo
## fleets share the two cores (`make test` runs them one at a time, beside the test suite).
CI_RUNS := ci-reference ci-dynamo ci-nats-prefix ci-oldest
CI_JOBS ?= 1

.PHONY: setup engines-setup real-engines conformance test ci-lane check lint typecheck pytest pytest-quick ci-conformance $(CI_RUNS) bench bench-docs generate examples

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml scripts/install-system-deps.sh
	bash scripts/install-system-deps.sh
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

## The real-engine stack (docs/harness.md, "Real engines"): vLLM on the CPU and Dynamo's vLLM
## sidecar in their own virtualenv (vLLM's pins would fight the project's); about 95 s, 3.9 GB.
ENGINES_VENV ?= .venv-engines
engines-setup: $(ENGINES_VENV)/.installed

$(ENGINES_VENV)/.installed: scripts/install-real-engines.sh
	ENGINES_VENV=$(ENGINES_VENV) bash scripts/install-real-engines.sh

## The real-engine lane: one heterogeneous fleet (tensor parallel 1 and 2) and every test marked
## real_engines against it, alone on the machine (the fleet takes about 8 GiB and both cores).
real-engines: setup engines-setup
	mkdir -p reports
	PRD_ENGINES_VENV=$(ENGINES_VENV) $(BIN)/pytest -n 0 -m real_engines --junit-xml=reports/real-engines.xml

## The main job: every conformance profile against the embedded default fleet. The client under
## test is the project's own, which follows CONFORMANCE_POLL_INTERVAL: it is judged at 0.1 s (a
## trainer's own run keeps the default 1 s, its real pace).
conformance: setup
	$(BIN)/prime-rl-dynamo conformance --client-poll-interval 0.1 --junit-xml reports/conformance.xml --json-report reports/conformance.json

## Everything CI checks: lint, types, the conformance suite on both embedded fleets and the
## roundtrip on the oldest Dynamo release (JUnit in reports/), and the test suite (integration
## tests included; its summary closes the output). Two lanes side by side: lint, types and the
## four conformance runs (about 130 s, most of it waiting on their fleets), one at a time and
## stopping at the first that fails, and the test suite. The one test that reads the runs'
## reports (tests/test_conformance_reports.py) goes last and waits for CI_DONE, which the first
## lane writes when it ends, whatever its status. The test suite's progress streams; the first
## lane prints one line per step and keeps each step's output in reports/ci-lane.log, printed
## whole when a step fails.
CI_DONE := reports/.ci-lane-done
CI_LOG := reports/ci-lane.log
test: setup engines-setup
	mkdir -p reports && rm -f $(CI_DONE)
	$(MAKE) --no-print-directory -j2 ci-lane pytest CI_REPORTS_DONE=$(CI_DONE)
	$(MAKE) --no-print-directory real-engines

ci-lane:
	@mkdir -p reports && : > $(CI_LOG)
	@rc=0; for target in lint typecheck $(CI_RUNS); do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $$target >> $(CI_LOG) 2>&1 || { rc=$$?; \
			echo "ci-lane: $$target FAILED (exit $$rc); its output:"; cat $(CI_LOG); break; }; \
		echo "ci-lane: $$target passed in $$(( $$(date +%s) - start )) s (output: $(CI_LOG))"; done; \
		echo $$rc > $(CI_DONE); exit $$rc

## The inner loop while editing (under 150 s on 2 cores): lint, types, and every test that starts
## no server and no process. tests/conftest.py makes that selection a fact: a test without one of
## these markers that binds a socket or starts a process fails, in this target and in `make test`.
STARTS := integration or dynamo or etcd or nats or slow or real_engines
## Lint, types and the tests run side by side (a cold mypy is a single core's work).
check: setup
	$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck pytest-quick

pytest-quick:
	$(BIN)/pytest -q -n 2 -m "not ($(STARTS))"

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/prime-rl-dynamo spec diff schema/frozen/v1 schema --accept schema/frozen/v1-accepted.json
	$(PY) -m tools.openapi --check
	$(PY) -m tools.codegen --check
	$(PY) -m tools.kill_matrix --check

typecheck:
	$(BIN)/mypy

## The four runs are independent (each fleet on its own free loopback ports, with its own etcd,
## NATS and store; each run its own reports), so they may run side by side (CI_JOBS).
ci-conformance:
	$(MAKE) --no-print-directory -j$(CI_JOBS) --output-sync=target $(CI_RUNS)
ci-reference:
	mkdir -p reports
	$(BIN)/prime-rl-dynamo conformance -q --seed 1 --target reference --client-poll-interval 0.1 \
		--junit-xml reports/conformance-reference.xml --json-report reports/conformance-reference.json
ci-dynamo:
	mkdir -p reports
	$(BIN)/prime-rl-dynamo conformance -q --seed 1 --target dynamo --client-poll-interval 0.1 \
		--junit-xml reports/conformance-dynamo.xml --json-report reports/conformance-dynamo.json
## Real Dynamo over NATS sometimes never answers the harness's first listing GET on 2 cores (the
## frontend's RL listener times out at start-up, its log empty: INCONCLUSIVE, exit 3, in 2 of
## about 8 CI runs). An inconclusive run is retried once on a fresh fleet; a verdict (exit 1) and
## any other status are final.
NATS_PREFIX_RUN := $(BIN)/prime-rl-dynamo conformance -q --seed 1 --profile roundtrip --topologies 1 \
	--request-plane nats --namespace-scope prefix \
	--junit-xml reports/conformance-dynamo-nats-prefix.xml \
	--json-report reports/conformance-dynamo-nats-prefix.json
ci-nats-prefix:
	mkdir -p reports
	$(NATS_PREFIX_RUN) || { rc=$$?; test $$rc -eq 3 || exit $$rc; \
		echo "ci-nats-prefix: INCONCLUSIVE (the fleet never answered); once more on a fresh fleet"; \
		$(NATS_PREFIX_RUN); }
# The roundtrip on the oldest Dynamo release the harness runs, in its own venv (.nox/ci-oldest),
# writing reports/conformance-dynamo-1.3.0.post1-roundtrip.xml: the per-release adaptations
# stay alive (docs/compat.md; the whole matrix: nox -s matrix).
ci-oldest:
	mkdir -p reports
	$(BIN)/nox -s ci-oldest

## Four workers (pytest-xdist) on two cores: the tests mostly wait (on fleets, deadlines and the
## processes they start; two workers kept the cores 46% busy), so more workers overlap those
## waits (make test under the lock: 526 s with two, 405 s with three, 335 s with four, about the
## same CPU). Every test that runs real Dynamo, etcd or NATS is in one xdist group
## (tests/conftest.py), so those never overlap: one worker runs them in turn (about 235 s).
PYTEST_WORKERS ?= 4
## CI_REPORTS_DONE (set by `make test`): the file whose arrival tests/conftest.py's ci_reports waits for.
pytest:
	mkdir -p reports
	CI_REPORTS_DONE=$(CI_REPORTS_DONE) $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup -m "not real_engines" --junit-xml=reports/pytest.xml

bench: setup
	$(PY) -m tools.bench --json reports/bench.json --plot reports/bench.png

## After a benchmark run into docs/bench/: rewrite the figures README.md and docs/ quote.
bench-docs: setup
	$(PY) -m tools.bench.docs

## After editing schema/ or tools/openapi-templates/: rewrite schema/openapi/ and prime_rl_dynamo/_models.py.
generate: setup
	$(PY) -m tools.openapi
	$(PY) -m tools.codegen

## After a change to the suite or its reports: rerun the examples of docs/conformance.md
## (two real runs on loopback, the HTML screenshot in headless Chromium, the report diff).
examples: setup
	$(PY) -m tools.conformance_examples
