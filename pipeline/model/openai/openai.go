package openai

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/secrets"
)

// Model asks an OpenAI-compatible Chat Completions endpoint. It is immutable
// after New and safe for concurrent use.
type Model struct {
	name        string
	stream      bool
	timeout     time.Duration
	temperature param.Opt[float64]
	maxTokens   param.Opt[int64]
	svc         oai.ChatCompletionService
	files       oai.FileService   // batch mode's input and output files (batch.go)
	batches     oai.BatchService  // batch mode's jobs
	batch       *BatchSettings    // nil: no batch mode
	redact      *secrets.Redactor // hides the API key, in any JSON spelling, in provider messages
}

var _ model.Model = (*Model)(nil)

// Option adjusts how New builds a Model.
type Option func(*options)

type options struct {
	httpClient *http.Client
	log        *slog.Logger
	sdk        []option.RequestOption
}

// WithHTTPClient sends the requests through c (a proxy, custom TLS, a
// recording transport). The default is a fresh client on
// http.DefaultTransport. The SDK still sets the timeout per attempt.
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithLogger logs retryable responses (429, 5xx) and transport failures at
// warn level with the model name, the status and the attempt number. Request
// headers, and with them the API key, are never logged. The default logs
// nothing.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithRequestOptions appends options of the official SDK (package
// github.com/openai/openai-go/v3/option) after New's own: extra headers,
// option.WithMaxRetryDelay, middleware. They can override anything New sets,
// the API key included; use them for what the configuration cannot say.
func WithRequestOptions(opts ...option.RequestOption) Option {
	return func(o *options) { o.sdk = append(o.sdk, opts...) }
}

// New builds a model from cfg: cfg.Name is the model, cfg.BaseURL the
// endpoint (empty: the SDK's default, https://api.openai.com/v1/), and the
// API key is read once, here, from the environment variable cfg.APIKeyEnv
// names; a missing or empty variable fails New with ErrMissingAPIKey. The
// SDK's own environment variables (OPENAI_API_KEY, OPENAI_BASE_URL, …) are
// ignored. The optional settings temperature, max_tokens, timeout (default
// 60s per attempt), max_retries (default 3) and stream (default true) are
// read from cfg.Raw; every problem is reported at once, each wrapping
// ErrInvalidConfig.
func New(cfg config.Model, opts ...Option) (*Model, error) {
	s, err := readSettings(cfg)
	if err != nil {
		return nil, fmt.Errorf("openai model %s: %w", cfg.Name, err)
	}
	key, ok := os.LookupEnv(s.keyEnv)
	if !ok || key == "" {
		return nil, fmt.Errorf("openai model %s: %w: environment variable %s (named by api_key_env) is not set", s.name, ErrMissingAPIKey, s.keyEnv)
	}
	o := options{httpClient: &http.Client{}, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}

	// Built from the service, not oai.NewClient, so that nothing is read
	// from the SDK's environment variables.
	sdk := []option.RequestOption{
		option.WithEnvironmentProduction(), // the default base URL
		option.WithHTTPClient(o.httpClient),
		option.WithAPIKey(key),
		option.WithMaxRetries(s.maxRetries),
		option.WithRequestTimeout(s.timeout),
		option.WithMiddleware(logAttempts(o.log, s.name)),
	}
	if s.baseURL != "" {
		sdk = append(sdk, option.WithBaseURL(s.baseURL))
	}
	sdk = append(sdk, o.sdk...)

	m := &Model{
		name:    s.name,
		stream:  s.stream,
		timeout: s.timeout,
		svc:     oai.NewChatCompletionService(sdk...),
		files:   oai.NewFileService(sdk...),
		batches: oai.NewBatchService(sdk...),
		batch:   s.batch,
		redact:  secrets.New(map[string]string{s.keyEnv: key}),
	}
	if s.temperature != nil {
		m.temperature = oai.Float(*s.temperature)
	}
	if s.maxTokens != nil {
		m.maxTokens = oai.Int(*s.maxTokens)
	}
	return m, nil
}

// Infer sends one Chat Completions request and returns the first choice.
// With stream on (the default), req.OnText gets each text delta as it
// arrives; with stream off it gets the whole text once. The SDK retries
// 408, 409, 429 and 5xx up to max_retries times with exponential backoff,
// honouring Retry-After; other failures return at once. Errors wrap
// *model.RateLimitedError (a 429 after the retries, around its *APIError),
// *APIError, ErrRefused, ErrMalformedResponse, ErrTimeout, or ctx.Err()
// when ctx ends, which Infer notices promptly, mid-stream too.
func (m *Model) Infer(ctx context.Context, req model.Request) (model.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return model.Response{}, fmt.Errorf("openai model %s: build request: %w", m.name, err)
	}
	var a answer
	if m.stream {
		a, err = m.streamed(ctx, params, req.OnText)
	} else {
		a, err = m.whole(ctx, params)
		if err == nil && req.OnText != nil && a.text != "" {
			req.OnText(a.text)
		}
	}
	if err != nil {
		return model.Response{}, fmt.Errorf("openai model %s: %w", m.name, err)
	}
	resp, err := a.response()
	if err != nil {
		return model.Response{}, fmt.Errorf("openai model %s: %w", m.name, err)
	}
	return resp, nil
}

// failure turns an error of the SDK into one of this package's.
func (m *Model) failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // the caller cancelled or its deadline passed
	}
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		e := &APIError{
			StatusCode: apiErr.StatusCode,
			Code:       apiErr.Code,
			Type:       apiErr.Type,
			Message:    cut(m.redact.String(apiErr.Message), 500),
			err:        err,
		}
		if apiErr.StatusCode == http.StatusTooManyRequests {
			var wait time.Duration
			if apiErr.Response != nil {
				wait = model.RetryAfter(apiErr.Response.Header, time.Now())
			}
			return &model.RateLimitedError{RetryAfter: wait, Err: e}
		}
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: no complete answer within %s (the timeout setting)", ErrTimeout, m.timeout)
	}
	return fmt.Errorf("request failed: %s", m.redact.String(err.Error()))
}

// logAttempts logs each attempt that the SDK may retry. It runs once per
// attempt, inside the SDK's retry loop.
func logAttempts(log *slog.Logger, name string) option.Middleware {
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		attempt := r.Header.Get("X-Stainless-Retry-Count")
		switch {
		case err != nil && r.Context().Err() == nil:
			log.Warn("openai request failed", "model", name, "attempt", attempt, "error", err)
		case err == nil && (res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500):
			log.Warn("openai endpoint asks to retry", "model", name, "attempt", attempt,
				"status", res.StatusCode, "retry_after", res.Header.Get("Retry-After"))
		}
		return res, err
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
