// Package console is the web console the gateway serves at /: a page to
// follow runs (filters, live status, a run's timeline of steps, messages,
// tool calls, decisions and events), clear the approvals inbox (approve,
// approve with edited arguments or a result, cancel with a reason; each
// answer quotes the call's args_hash, so an approval of arguments that
// changed since is refused), follow a batch and read the dead-letter
// topic. It is static files embedded in the binary, plain JavaScript with
// no build step, that call the HTTP API with the API key the person
// enters once (kept in the browser's localStorage).
package console
