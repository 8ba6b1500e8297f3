// Package synthetic is the benchmark model provider: no language model, just
// a configurable latency, a fixed number of tool calls per step for a given
// number of steps, and fixed token counts. It lets a benchmark load the
// pipeline (Kafka, Redis, workers, tools) the way a real model would, at a
// known and repeatable cost.
//
//	model:
//	  provider: synthetic
//	  latency_ms: 50           # each answer waits this long (default 0) …
//	  latency_jitter_ms: 20    # … give or take up to this, uniformly (default 0; at most latency_ms)
//	  tool_calls_per_step: 2   # default 1
//	  tool: echo               # the tool called (default echo)
//	  arguments: {ms: 5}       # optional: the arguments of every call (default: a small object naming run, step and call)
//	  steps: 3                 # steps 0..steps-1 call tools; step `steps` answers without any (default 1)
//	  input_tokens: 100        # usage reported per step (default 100)
//	  output_tokens: 20        # (default 20)
//	  seed: 1                  # default 0
//	  record: /tmp/inferences  # optional: append "start <ns>"/"end <ns>" per inference (to count them from outside)
//
// Everything random (the latency's jitter, the "value" in the default
// arguments) is drawn from a generator seeded by (seed, run id, step), so a
// step answers the same every time it is asked, in any process, and two runs
// differ. There is no global random state.
//
//	m, err := synthetic.Parse(raw)
//	resp, err := m.Infer(ctx, model.Request{RunID: "r-1", Step: 0})
package synthetic
