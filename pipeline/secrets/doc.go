// Package secrets keeps the values of the secrets the configuration names
// (an http tool's headers_env, a model's api_key_env, API keys, decision
// signing keys, the Kafka and Redis passwords) out of what stepwise stores,
// publishes and logs.
//
// A Redactor is built once from the environment variables that hold them
// and applied at the few places where outside text enters stepwise: a tool
// call's result and error before the tool worker commits them, a model's
// answer (text, streamed deltas, tool-call arguments) before the step
// worker commits or streams it, a run's error before it is recorded, and
// every log record (Handler). Each value is replaced by
// "[redacted:<VARIABLE>]" in every spelling a JSON reader decodes to it:
// as written, and with any of its characters escaped (`\/`, `\"`, `\u00e9`
// in either case, a surrogate pair), in free text (an error body quoting
// JSON) as in a JSON document, whose strings are redacted as decoded. Text
// is redacted before anything cuts it, so a cut cannot split a secret.
//
//	r := secrets.FromEnv(cfg.SecretEnvs())
//	out := r.String(toolError)
//	log := slog.New(secrets.Handler(base, r))
//
// Not covered: a secret a tool or model transforms (base64, split across
// streamed deltas, reversed), and values shorter than MinLen, which would
// shred ordinary text.
package secrets
