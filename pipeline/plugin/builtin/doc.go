// Package builtin holds stepwise's built-in plugins and the registry that
// offers them. An agent enables a plugin by naming it in its configuration,
// with the plugin's settings:
//
//	agents:
//	  assistant:
//	    plugins:
//	      reminder:       {message: "Answer in English.", every: 2}
//	      deferred_tools: {defer: [issue_refund, export_report]}
//	      result_guard:   {max_bytes: 4000}
//	      loop_warning:   {window: 3}
//	      compaction:     {budget_tokens: 8000, keep_last: 6, tool_result_max_bytes: 2000}
//
// The plugins:
//
//   - reminder adds a context message before inference: every N steps, and
//     optionally only when a call of the previous step failed.
//   - deferred_tools keeps some tools out of the model's tool list and offers
//     a tool_search tool instead; a search answers with the matching tools'
//     specs and promotes them for the next step. Actions deferred_tools.defer
//     and deferred_tools.promote move tools between the two lists.
//   - result_guard cuts tool results (and errors) larger than max_bytes, at a
//     UTF-8 boundary, and tells the model so in the result (the tool worker
//     runs it, at AfterToolExecute).
//   - loop_warning notices the model proposing the same calls step after step
//     and tells it, before its next inference, to change approach.
//   - compaction keeps each inference request within a token budget: long
//     tool results are shown by reference (the tool fetch_result reads
//     them), and older turns are summarised by a model or dropped. The
//     summary is kept with the run as it is made, so a redelivered step
//     does not summarise again.
//
// Registry returns a registry with all five; a program that has plugins of
// its own adds them to it and hands it to its workers:
//
//	reg := builtin.Registry()
//	reg.Add("audit", audit.New)
//
// Settings are strict: an unknown field is an error, and every invalid value
// is reported at once, wrapped in ErrInvalidSettings. The plugins keep their
// state in persistent keys named after them (deferred_tools.deferred,
// loop_warning.recent, ...), checkpointed with the run and shown in
// GET /v1/runs/{id}. All hooks are replay-safe: their effects go through the
// Command they return.
package builtin
