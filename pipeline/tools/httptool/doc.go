// Package httptool executes tools by calling an HTTP endpoint: the `http`
// executor of the configuration.
//
//	t, err := httptool.New("issue_refund", *tool.Executor.HTTP) // reads headers_env now
//	out, err := t.Execute(ctx, call)
//
// The request:
//
//   - POST, PUT, PATCH and DELETE send the call's arguments as the JSON body
//     (Content-Type: application/json); empty arguments are sent as {}.
//   - GET sends them as query parameters, added to any the URL already has:
//     one parameter per top-level property; strings as they are, numbers,
//     booleans and null as their JSON text, an array as one parameter per
//     element, objects (and arrays inside arrays) as their JSON text.
//   - Headers: every header of headers_env, with the value of its environment
//     variable, read once by New (a missing or empty variable is an error
//     there; values are never logged or put in errors);
//     Idempotency-Key: <run_id>:<call_id>, the same on every attempt of a
//     call, so the endpoint can recognise a retry; X-Stepwise-Attempt: <n>.
//   - Deadline: the executor's timeout when set, within the call's context
//     (whose deadline is the tool's timeout); whichever ends first.
//   - Redirects are followed within the same scheme and host only, since
//     the headers may carry secrets; a redirect elsewhere is a non-2xx
//     answer like any other.
//
// The result:
//
//   - 2xx: the body. A JSON body (Content-Type application/json or *+json,
//     or no Content-Type and a body that parses as JSON) is the result as
//     it is; any other body becomes a JSON string; an empty body is null.
//   - any other status: a tool error "HTTP <status>: <body excerpt>", the
//     excerpt redacted (WithRedactor) and then cut at 512 bytes with
//     "…(truncated)"; errors.As finds a *StatusError.
//   - no response (refused, reset, timed out): a tool error naming the method
//     and URL (without query and credentials) and the cause.
//
// There are no retries here: a failed call is retried, if at all, by the
// tool worker under the tool's max_attempts, with the same Idempotency-Key.
package httptool
