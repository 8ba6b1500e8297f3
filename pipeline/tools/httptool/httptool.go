package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/secrets"
	"github.com/stepwise-run/stepwise/pipeline/tools"
)

// Header names set on every request.
const (
	HeaderIdempotencyKey = "Idempotency-Key"    // <run_id>:<call_id>
	HeaderAttempt        = "X-Stepwise-Attempt" // the attempt number, from 1
)

// Defaults of the options.
const (
	DefaultMaxResponseBytes = 8 << 20 // 8 MiB
	ExcerptBytes            = 512     // body excerpt in a StatusError
)

// Option configures an executor.
type Option func(*executor)

// WithClient sets the HTTP client. The default is a client of its own over
// http.DefaultTransport that follows up to 10 redirects within the same
// scheme and host, and no others (the configured headers may carry secrets;
// a redirect elsewhere is answered as the 3xx it is). A given client's
// Timeout, if any, applies on top of the executor's.
func WithClient(c *http.Client) Option {
	return func(e *executor) { e.client = c }
}

// WithMaxResponseBytes bounds the response body read as a result (default
// DefaultMaxResponseBytes); a larger body fails the call.
func WithMaxResponseBytes(n int64) Option {
	return func(e *executor) { e.maxBody = n }
}

// WithRedactor redacts the body excerpt of a StatusError with r before it
// is cut, so a secret the endpoint echoes across the cut is redacted whole.
// The default (nil) redacts nothing.
func WithRedactor(r *secrets.Redactor) Option {
	return func(e *executor) { e.redact = r }
}

// WithUserAgent sets the User-Agent header (default "stepwise-toolworker").
func WithUserAgent(ua string) Option {
	return func(e *executor) { e.userAgent = ua }
}

// StatusError is the tool error of a response whose status is not 2xx.
type StatusError struct {
	StatusCode int
	// Excerpt is the start of the body, redacted, at most ExcerptBytes,
	// cut at a rune boundary, whitespace trimmed.
	Excerpt   string
	Truncated bool
}

// Error reads "HTTP 503: <excerpt>", the status text standing in for an
// empty body.
func (e *StatusError) Error() string {
	detail := e.Excerpt
	if detail == "" {
		detail = http.StatusText(e.StatusCode)
	}
	if e.Truncated {
		detail += "…(truncated)"
	}
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, detail)
}

type executor struct {
	name      string
	method    string
	url       *url.URL
	shownURL  string // for errors: no query, no credentials
	headers   http.Header
	timeout   time.Duration
	client    *http.Client
	maxBody   int64
	userAgent string
	redact    *secrets.Redactor
}

// New returns the executor of the tool called name. It reads the environment
// variables of cfg.HeadersEnv now and fails, naming every missing one (never
// a value), when any is unset or empty; it also refuses a URL that is not
// absolute http(s) and a method other than GET, POST, PUT, PATCH, DELETE
// (empty means POST). The executor is safe for concurrent use.
func New(name string, cfg config.HTTPExecutor, opts ...Option) (tools.Tool, error) {
	e := &executor{
		name:      name,
		method:    strings.ToUpper(cfg.Method),
		timeout:   cfg.Timeout.Duration,
		headers:   http.Header{},
		maxBody:   DefaultMaxResponseBytes,
		userAgent: "stepwise-toolworker",
	}
	for _, o := range opts {
		o(e)
	}
	if e.client == nil {
		e.client = &http.Client{CheckRedirect: sameOrigin}
	}
	if e.method == "" {
		e.method = http.MethodPost
	}
	var errs []error
	switch e.method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		errs = append(errs, fmt.Errorf("method %q: want GET, POST, PUT, PATCH or DELETE", cfg.Method))
	}
	u, err := url.Parse(cfg.URL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("url: %w", err))
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("url %q is not an absolute http or https URL", cfg.URL))
	default:
		e.url = u
		shown := *u
		shown.User, shown.RawQuery, shown.Fragment = nil, "", ""
		e.shownURL = shown.String()
	}
	if e.timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s is negative", e.timeout))
	}
	names := make([]string, 0, len(cfg.HeadersEnv))
	for h := range cfg.HeadersEnv {
		names = append(names, h)
	}
	sort.Strings(names)
	for _, h := range names {
		env := cfg.HeadersEnv[h]
		v, ok := os.LookupEnv(env)
		switch {
		case env == "":
			errs = append(errs, fmt.Errorf("header %s: no environment variable named", h))
		case !ok:
			errs = append(errs, fmt.Errorf("header %s: environment variable %s is not set", h, env))
		case v == "":
			errs = append(errs, fmt.Errorf("header %s: environment variable %s is empty", h, env))
		default:
			e.headers.Set(h, v)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("http tool %s: %w", name, err)
	}
	return e, nil
}

// Execute sends the call and reads the result; see the package doc.
func (e *executor) Execute(parent context.Context, call tools.Call) (json.RawMessage, error) {
	ctx := parent
	if e.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
		defer cancel()
	}
	req, err := e.request(ctx, call)
	if err != nil {
		return nil, err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, e.transportError(parent, ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, e.statusError(resp)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, e.maxBody+1))
	if err != nil {
		return nil, e.transportError(parent, ctx, fmt.Errorf("read response: %w", err))
	}
	if int64(len(body)) > e.maxBody {
		return nil, fmt.Errorf("%s %s: response body exceeds %d bytes", e.method, e.shownURL, e.maxBody)
	}
	return result(resp.Header.Get("Content-Type"), body)
}

func (e *executor) request(ctx context.Context, call tools.Call) (*http.Request, error) {
	args := bytes.TrimSpace(call.Arguments)
	if len(args) == 0 {
		args = []byte("{}")
	}
	u := *e.url
	var body io.Reader
	if e.method == http.MethodGet {
		q, err := query(u.Query(), args)
		if err != nil {
			return nil, err
		}
		u.RawQuery = q.Encode()
	} else {
		if !json.Valid(args) {
			return nil, errors.New("arguments are not valid JSON")
		}
		body = bytes.NewReader(args)
	}
	req, err := http.NewRequestWithContext(ctx, e.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", e.method, e.shownURL, err)
	}
	for h, v := range e.headers {
		req.Header[h] = append([]string(nil), v...)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.5")
	req.Header.Set("User-Agent", e.userAgent)
	req.Header.Set(HeaderIdempotencyKey, call.RunID+":"+call.CallID)
	req.Header.Set(HeaderAttempt, strconv.Itoa(call.Attempt))
	return req, nil
}

// sameOrigin follows a redirect only within the first request's scheme and
// host, at most 10 times.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if req.URL.Scheme != via[0].URL.Scheme || req.URL.Host != via[0].URL.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

// query adds the arguments to q; see the package doc for the encoding.
func query(q url.Values, args []byte) (url.Values, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return nil, errors.New("arguments must be a JSON object")
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := obj[k]
		var arr []json.RawMessage
		if len(v) > 0 && v[0] == '[' && json.Unmarshal(v, &arr) == nil {
			for _, el := range arr {
				q.Add(k, scalar(el))
			}
			continue
		}
		q.Add(k, scalar(v))
	}
	return q, nil
}

// scalar renders a JSON value as a query parameter value: a string unquoted,
// anything else as its JSON text.
func scalar(v json.RawMessage) string {
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// result turns a 2xx body into the call's result.
func result(contentType string, body []byte) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return json.RawMessage("null"), nil
	}
	if isJSON(contentType) && json.Valid(trimmed) {
		return json.RawMessage(trimmed), nil
	}
	return json.Marshal(string(body))
}

// isJSON reports whether a Content-Type says JSON, or says nothing (the body
// then decides).
func isJSON(contentType string) bool {
	if contentType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// statusError reads the body of a non-2xx answer: up to errorBodyBytes of
// it, redacted, then cut to ExcerptBytes.
func (e *executor) statusError(resp *http.Response) error {
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
	excerpt, truncated := e.redact.String(string(buf)), false
	if len(excerpt) > ExcerptBytes {
		excerpt, truncated = excerpt[:ExcerptBytes], true
		for i := 1; i < utf8.UTFMax; i++ { // do not end in part of a rune
			if r, size := utf8.DecodeLastRuneInString(excerpt); r != utf8.RuneError || size != 1 {
				break
			}
			excerpt = excerpt[:len(excerpt)-1]
		}
	}
	return &StatusError{
		StatusCode: resp.StatusCode,
		Excerpt:    strings.ToValidUTF8(strings.TrimSpace(excerpt), "\uFFFD"),
		Truncated:  truncated,
	}
}

// errorBodyBytes is how much of a non-2xx body is read to be redacted
// before the cut: enough for a secret of thousands of characters, each
// written as \uXXXX, that starts within the excerpt.
const errorBodyBytes = 64 << 10

// transportError words a failure to get a response. url.Error would repeat
// the full URL, query (GET arguments) included; the cause is enough.
// A deadline of the executor's own timeout (not the caller's) is said as such.
func (e *executor) transportError(parent, ctx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: no response within %s", e.method, e.shownURL, e.timeout)
	}
	return fmt.Errorf("%s %s: %w", e.method, e.shownURL, err)
}
