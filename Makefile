# Common tasks. `make test` is what CI runs (.ci/run) and what the README
# calls "test it".

GO ?= go

.PHONY: test test-short bench build vet demo

## test: every test, with the race detector (integration tests included)
test:
	$(GO) test -race -count=1 -timeout 15m ./...

## test-short: the fast tests only (-short skips the slow suites)
test-short:
	$(GO) test -race -count=1 -short -timeout 10m ./...

## bench: the pipeline benchmarks, one iteration each (see docs/benchmarks.md)
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./internal/app/

## build: compile every package and program
build:
	$(GO) build ./...

## vet: go vet every package
vet:
	$(GO) vet ./...

## demo: a sample batch of runs on an embedded stack, with a summary
demo:
	$(GO) run ./cmd/stepwise demo

## chaos: the chaos harness (docs/reliability.md): separate worker processes
## killed -9, Redis killed -9, records duplicated; fails on a stuck, wrong or
## double-committed run. Defaults 1000 runs and 60s of churn; bounded:
## `make chaos CHAOS_RUNS=200 CHAOS_CHURN=30s`. Other knobs: STEPWISE_CHAOS_*.
CHAOS_RUNS ?= $(or $(STEPWISE_CHAOS_RUNS),1000)
CHAOS_CHURN ?= $(or $(STEPWISE_CHAOS_CHURN),60s)
.PHONY: chaos
chaos:
	STEPWISE_CHAOS_RUNS=$(CHAOS_RUNS) STEPWISE_CHAOS_CHURN=$(CHAOS_CHURN) \
		$(GO) test -tags chaos -run '^TestChaos$$' -count=1 -v -timeout 30m ./internal/chaos/
