// Package script is the deterministic model provider: a run's answers are
// written out in advance, one turn per step. Demos, tests and benchmarks use
// it; a run may bring its own script in POST /v1/runs.
//
//	{"provider": "script",
//	 "turns": [{"text": "looking", "tool_calls": [{"name": "echo", "arguments": {"x": 1}}]},
//	           {"text": "done"}],
//	 "loop_last": false}
//
// Step N answers with turn N. Past the last turn it answers the last turn
// again when loop_last is set, and a plain final text otherwise. A turn's
// delay_ms holds its answer back; its stream_ms streams the text a word at
// a time, that far apart, as a streaming provider would.
package script
