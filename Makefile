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
