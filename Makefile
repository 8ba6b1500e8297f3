# Common tasks. `make test` is what CI runs (.ci/run) and what the README
# calls "test it".

GO ?= go

## MODULES: the repository's Go modules: the runtime (.) and the checks kept
## apart from it so that their dependencies stay out of its go.mod (ADR
## 0052). `./...` stops at a go.mod, so each target below runs in each.
MODULES = . deploy e2e/console
each = set -e; for m in $(MODULES); do (cd $$m && $(1)); done

.PHONY: test test-go test-js test-short bench build vet demo fuzz

## test: every test: the Go tests with the race detector (integration tests
## included), then the chat protocols driven by their real clients (test-js)
test: test-go test-js

## test-go: go test -race over every package of every module
test-go:
	@$(call each,$(GO) test -race -count=1 -timeout 15m ./...)

## test-js: the node tests of e2e/js (the `ai` package's chat client, ai 7
## and 6, and @ag-ui/client's HttpAgent) against `stepwise dev`, built here;
## needs node and npm, installs the locked packages with npm ci
test-js:
	$(GO) build -o e2e/js/.bin/stepwise ./cmd/stepwise
	cd e2e/js && npm ci --no-audit --no-fund --loglevel=error && STEPWISE_BIN="$(CURDIR)/e2e/js/.bin/stepwise" npm test

## contracts: the contracts (contracts/, linked from docs/) checked with
## their ecosystems' own validators: asyncapi.yaml as AsyncAPI 3.0
## (@asyncapi/parser), openapi.yaml as OpenAPI 3.1
## (@apidevtools/swagger-parser); needs node and npm, installs the locked
## packages with npm ci. The Go tests tie both documents to the code.
.PHONY: contracts
contracts:
	cd contracts && npm ci --no-audit --no-fund --loglevel=error && npm run --silent validate

## test-python: the Python client's tests (sdk/python) against `stepwise
## dev`, built here; makes a virtualenv in sdk/python/.venv (gitignored)
## with PYTHON (python3 and its venv module), installs the client and its
## kafka extra (confluent-kafka) into it
## with pip and runs pytest
PYTHON ?= python3
PY_VENV = sdk/python/.venv
.PHONY: test-python
test-python:
	$(GO) build -o sdk/python/.bin/stepwise ./cmd/stepwise
	$(PYTHON) -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install --quiet --disable-pip-version-check "./sdk/python[kafka]" pytest
	cd sdk/python && STEPWISE_BIN="$(CURDIR)/sdk/python/.bin/stepwise" .venv/bin/pytest -q -p no:cacheprovider

## test-kafka: the Kafka-touching packages against a 3-node Apache Kafka
## cluster started for the run (scripts/kafka; needs Java 17+ and Maven,
## fetches Apache Kafka from Maven Central once per machine)
.PHONY: test-kafka
test-kafka:
	GO=$(GO) scripts/test-kafka

## test-short: the fast tests only (-short skips the slow suites)
test-short:
	@$(call each,$(GO) test -race -count=1 -short -timeout 10m ./...)

## bench: the pipeline benchmarks, one iteration each (see docs/benchmarks.md)
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./internal/app/

## redis-instructions: the instructions Redis executes a step of the
## hot-path workload, counted by valgrind (scripts/redis-instructions;
## repeatable to about 0.1%, where Redis's CPU time is not). REDIS_SERVER
## picks the redis-server binary.
.PHONY: redis-instructions
redis-instructions:
	scripts/redis-instructions

## redis-capacity: the agent steps a second one redis-server carries, with
## the server and the benchmark pinned to cores of their own
## (scripts/redis-capacity).
.PHONY: redis-capacity
redis-capacity:
	scripts/redis-capacity

## build: compile every package and program of every module
build:
	@$(call each,$(GO) build ./...)

## vet: go vet every package of every module (the chaos harness with its tag)
vet:
	@$(call each,$(GO) vet ./...)
	$(GO) vet -tags chaos ./internal/tooling/chaos/

## download: every module's dependencies into the module cache
.PHONY: download
download:
	@$(call each,$(GO) mod download)

## demo: a sample batch of runs on an embedded stack, with a summary
demo:
	$(GO) run ./cmd/stepwise demo

## chaos: the chaos harness (docs/reliability.md): separate worker processes
## killed -9, Redis killed -9, records duplicated, with child runs, handoffs,
## forks, schedule ticks and runs in batch mode (the batcher's holder killed
## with a batch in flight); fails on a stuck, wrong, double-committed or
## double-started run, a tick doubled or missed, or a batch request or
## answer twice. Defaults 1000 runs and
## 60s of churn; bounded: `make chaos CHAOS_RUNS=200 CHAOS_CHURN=30s`.
## CHAOS_KAFKA=real runs it on a 3-node Apache Kafka cluster (scripts/kafka)
## and kills brokers too.
## Other knobs: STEPWISE_CHAOS_*.
CHAOS_RUNS ?= $(or $(STEPWISE_CHAOS_RUNS),1000)
CHAOS_CHURN ?= $(or $(STEPWISE_CHAOS_CHURN),60s)
CHAOS_KAFKA ?= $(or $(STEPWISE_CHAOS_KAFKA),embedded)
.PHONY: chaos
chaos:
	STEPWISE_CHAOS_RUNS=$(CHAOS_RUNS) STEPWISE_CHAOS_CHURN=$(CHAOS_CHURN) STEPWISE_CHAOS_KAFKA=$(CHAOS_KAFKA) \
		$(GO) test -tags chaos -run '^TestChaos$$' -count=1 -v -timeout 30m ./internal/tooling/chaos/

## chaos-rolling: the rolling-restart experiment (docs/reliability.md,
## "Rolling restart"): while runs are in flight, every step and tool worker
## in turn is stopped with SIGTERM and replaced, twice over; fails on a
## stuck, wrong or double-committed run, on a run paused longer than the
## shutdown grace (3s here) plus a slack, and on a worker that does not exit.
## Defaults 200 runs and 60s; `make chaos-rolling CHAOS_ROLLING_RUNS=100`.
CHAOS_ROLLING_RUNS ?= $(or $(STEPWISE_CHAOS_RUNS),200)
CHAOS_ROLLING_CHURN ?= $(or $(STEPWISE_CHAOS_CHURN),60s)
.PHONY: chaos-rolling
chaos-rolling:
	STEPWISE_CHAOS_ROLLING=true STEPWISE_CHAOS_RUNS=$(CHAOS_ROLLING_RUNS) STEPWISE_CHAOS_CHURN=$(CHAOS_ROLLING_CHURN) \
		$(GO) test -tags chaos -run '^TestChaos$$' -count=1 -v -timeout 30m ./internal/tooling/chaos/

## fuzz: every fuzz target (the decoders of each topic's message, the HTTP
## bodies, the configuration, ask_when conditions, script models, the
## fan-in's view of a step, the event log's writer) for FUZZTIME each;
## their seed corpora run with `make test` too. FUZZTIME is an execution
## count (Nx), not a duration: a wall-clock -fuzztime races Go's
## fuzz coordinator and fails with "context deadline exceeded" (golang/go#75804).
## An input the fuzzer finds lands in the package's testdata/fuzz: commit it,
## it is a regression test from then on.
FUZZTIME ?= 2000x
FUZZ_PKGS = ./topics ./pipeline/gateway ./pipeline/config ./pipeline/policy ./pipeline/model/script ./pipeline/store ./pipeline/secrets
fuzz:
	@set -e; for pkg in $(FUZZ_PKGS); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$target ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done
