package synthetic

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/model"
)

// Provider is the provider name of synthetic models.
const Provider = "synthetic"

// Config is a synthetic model's configuration; see the package comment for
// the meaning and default of each field.
type Config struct {
	Provider         string          `json:"provider"`
	LatencyMS        int             `json:"latency_ms"`
	LatencyJitterMS  int             `json:"latency_jitter_ms"`
	ToolCallsPerStep int             `json:"tool_calls_per_step"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	Steps            int             `json:"steps"`
	InputTokens      int64           `json:"input_tokens"`
	OutputTokens     int64           `json:"output_tokens"`
	Seed             int64           `json:"seed"`
	// Record, when set, is a file each inference appends "start <unix ns>"
	// and "end <unix ns>" lines to, around its latency: how many ran at
	// once, across processes, is counted from it (limits' tests).
	Record string `json:"record,omitempty"`
}

// DefaultConfig is the configuration of {"provider": "synthetic"}.
func DefaultConfig() Config {
	return Config{Provider: Provider, ToolCallsPerStep: 1, Tool: "echo", Steps: 1, InputTokens: 100, OutputTokens: 20}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("synthetic model: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Provider != Provider {
		bad("provider", "is %q, want %q", c.Provider, Provider)
	}
	if c.LatencyMS < 0 {
		bad("latency_ms", "must not be negative, got %d", c.LatencyMS)
	}
	if c.LatencyJitterMS < 0 {
		bad("latency_jitter_ms", "must not be negative, got %d", c.LatencyJitterMS)
	} else if c.LatencyJitterMS > max(c.LatencyMS, 0) {
		bad("latency_jitter_ms", "%d is more than latency_ms (%d); a latency cannot go below zero", c.LatencyJitterMS, c.LatencyMS)
	}
	if c.ToolCallsPerStep < 0 {
		bad("tool_calls_per_step", "must not be negative, got %d", c.ToolCallsPerStep)
	}
	if c.ToolCallsPerStep > 0 && c.Tool == "" {
		bad("tool", "required when tool_calls_per_step is more than 0")
	}
	if len(c.Arguments) > 0 && !isObject(c.Arguments) {
		bad("arguments", "want a JSON object, got %s", c.Arguments)
	}
	if c.Steps < 0 {
		bad("steps", "must not be negative, got %d", c.Steps)
	}
	if c.InputTokens < 0 {
		bad("input_tokens", "must not be negative, got %d", c.InputTokens)
	}
	if c.OutputTokens < 0 {
		bad("output_tokens", "must not be negative, got %d", c.OutputTokens)
	}
	return errors.Join(errs...)
}

// Model is a synthetic model. It is immutable and safe for concurrent use.
type Model struct {
	cfg Config
}

var _ model.Model = (*Model)(nil)

// sharedFields belong to every model object (package config reads them);
// a synthetic model ignores them, so switching an agent between openai and
// synthetic for a benchmark needs only the provider changed.
var sharedFields = []string{"name", "base_url", "api_key_env"}

// Parse reads and validates a synthetic model object, defaults filled in,
// reporting every problem at once: wrong types, unknown fields and invalid
// values alike.
func Parse(raw json.RawMessage) (*Model, error) {
	cfg := DefaultConfig()
	raw = bytes.TrimSpace(raw)
	var fields map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		return nil, fmt.Errorf("synthetic model: want a JSON object, got %q", cut(string(raw), 60))
	}
	var errs []error
	for _, k := range sortedKeys(fields) {
		v := fields[k]
		if slices.Contains(sharedFields, k) || bytes.Equal(v, []byte("null")) {
			continue
		}
		var dst any
		switch k {
		case "provider":
			dst = &cfg.Provider
		case "latency_ms":
			dst = &cfg.LatencyMS
		case "latency_jitter_ms":
			dst = &cfg.LatencyJitterMS
		case "tool_calls_per_step":
			dst = &cfg.ToolCallsPerStep
		case "tool":
			dst = &cfg.Tool
		case "arguments":
			dst = &cfg.Arguments
		case "steps":
			dst = &cfg.Steps
		case "input_tokens":
			dst = &cfg.InputTokens
		case "output_tokens":
			dst = &cfg.OutputTokens
		case "seed":
			dst = &cfg.Seed
		case "record":
			dst = &cfg.Record
		default:
			errs = append(errs, fmt.Errorf("synthetic model: %s: unknown setting", k))
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			errs = append(errs, fmt.Errorf("synthetic model: %s: want %s, got %s", k, kind(dst), cut(string(v), 60)))
		}
	}
	if err := errors.Join(append(errs, cfg.Validate())...); err != nil {
		return nil, err
	}
	return New(cfg)
}

// New builds a model from a Config, which it validates. Unlike Parse it does
// not fill in defaults: start from DefaultConfig.
func New(cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Arguments) > 0 {
		var b bytes.Buffer
		_ = json.Compact(&b, cfg.Arguments) // valid: Validate checked it
		cfg.Arguments = b.Bytes()
	}
	return &Model{cfg: cfg}, nil
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Latency is how long step step of run runID waits before it answers:
// latency_ms give or take up to latency_jitter_ms, the same on every call.
func (m *Model) Latency(runID string, step int) time.Duration {
	return m.latency(m.rng(runID, step))
}

func (m *Model) latency(r *rand.Rand) time.Duration {
	d := time.Duration(m.cfg.LatencyMS) * time.Millisecond
	if j := int64(m.cfg.LatencyJitterMS) * int64(time.Millisecond/time.Microsecond); j > 0 {
		d += time.Duration(r.Int64N(2*j+1)-j) * time.Microsecond
	}
	return d
}

// record appends what happened now to the Record file, if there is one.
func (m *Model) record(what string) error {
	if m.cfg.Record == "" {
		return nil
	}
	f, err := os.OpenFile(m.cfg.Record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("synthetic model: record: %w", err)
	}
	_, err = fmt.Fprintf(f, "%s %d\n", what, time.Now().UnixNano())
	return errors.Join(err, f.Close())
}

// Infer waits the step's latency (returning ctx.Err() if ctx ends first),
// then answers: steps 0..steps-1 propose tool_calls_per_step calls of the
// tool, with ids "syn_<step>_<i>"; later steps answer a final text without
// calls. OnText gets the text word by word.
func (m *Model) Infer(ctx context.Context, req model.Request) (model.Response, error) {
	r := m.rng(req.RunID, req.Step)
	if err := m.record("start"); err != nil {
		return model.Response{}, err
	}
	defer func() { _ = m.record("end") }() // a failed start has failed the inference already
	if d := m.latency(r); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return model.Response{}, ctx.Err()
		case <-t.C:
		}
	} else if err := ctx.Err(); err != nil {
		return model.Response{}, err
	}

	resp := model.Response{Usage: pipeline.Usage{InputTokens: m.cfg.InputTokens, OutputTokens: m.cfg.OutputTokens}}
	if req.Step < m.cfg.Steps && m.cfg.ToolCallsPerStep > 0 {
		resp.Text = fmt.Sprintf("Step %d: calling %s %d times.", req.Step, m.cfg.Tool, m.cfg.ToolCallsPerStep)
		for i := range m.cfg.ToolCallsPerStep {
			resp.ToolCalls = append(resp.ToolCalls, pipeline.ToolCallRequest{
				ID:        fmt.Sprintf("syn_%d_%d", req.Step, i),
				Name:      m.cfg.Tool,
				Arguments: m.arguments(r, req.RunID, req.Step, i),
			})
		}
	} else {
		resp.Text = fmt.Sprintf("Done at step %d.", req.Step)
	}
	if req.OnText != nil {
		for _, w := range strings.SplitAfter(resp.Text, " ") {
			req.OnText(w)
		}
	}
	return resp, nil
}

func (m *Model) arguments(r *rand.Rand, runID string, step, call int) json.RawMessage {
	if len(m.cfg.Arguments) > 0 {
		return m.cfg.Arguments
	}
	b, _ := json.Marshal(struct {
		RunID string `json:"run_id"`
		Step  int    `json:"step"`
		Call  int    `json:"call"`
		Value uint32 `json:"value"`
	}{runID, step, call, r.Uint32()})
	return b
}

// rng is the generator of one step: seeded by (seed, run id, step), so the
// same step draws the same numbers in every process.
func (m *Model) rng(runID string, step int) *rand.Rand {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(step))
	h.Write(b[:])
	h.Write([]byte(runID))
	return rand.New(rand.NewPCG(uint64(m.cfg.Seed), h.Sum64()))
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func kind(dst any) string {
	switch dst.(type) {
	case *string:
		return "a string"
	case *json.RawMessage:
		return "a JSON value"
	default:
		return "a whole number"
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
