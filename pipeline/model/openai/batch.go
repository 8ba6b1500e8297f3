package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
)

// BatchSettings are the batch mode of a model, its setting batch (ADR
// 0071): its steps' requests go through the provider's Batch API, in jobs
// of at most MaxRequests requests and MaxBytes of input file, each closed
// once its oldest request has waited MaxWait, to be answered within
// Window. Its fallbacks (ADR 0072): Default is the mode of a run that
// names none; a run whose deadline (its agent's stop.timeout) is nearer
// than LiveWithin infers live; OnError says what an error answer does to
// its step, OnFailure what a failed or expired batch does to its steps.
type BatchSettings struct {
	Window      time.Duration          // default 24h, the one window OpenAI offers
	MaxWait     time.Duration          // default 5m
	MaxRequests int                    // default 50,000, OpenAI's limit per file
	MaxBytes    int                    // default 200 MB, OpenAI's limit per file
	Default     pipeline.InferenceMode // default batch
	LiveWithin  time.Duration          // default Window
	OnError     string                 // BatchOnErrorFail (default) or BatchOnErrorRetry
	OnFailure   string                 // BatchOnFailureRetry (default) or BatchOnFailureLive
}

// What an error answer does to its step (batch.on_error): fail it, or send
// its request again in the next batch, up to stepworker.max_attempts.
const (
	BatchOnErrorFail  = "fail"
	BatchOnErrorRetry = "retry"
)

// What a batch that failed, expired or was cancelled at the provider does
// to its unanswered steps (batch.on_failure): send their requests again in
// the next batch, or infer them live.
const (
	BatchOnFailureRetry = "retry"
	BatchOnFailureLive  = "live"
)

// Defaults of the batch settings.
const (
	DefaultBatchWindow      = 24 * time.Hour
	DefaultBatchMaxWait     = 5 * time.Minute
	DefaultBatchMaxRequests = 50_000
	DefaultBatchMaxBytes    = 200 << 20
)

// batchFields are the settings of batch.
var batchFields = []string{"window", "max_wait", "max_requests", "max_bytes", "default", "live_within", "on_error", "on_failure"}

// readBatch reads the setting batch, v, reporting each problem to bad.
func readBatch(v json.RawMessage, bad func(field, format string, args ...any)) *BatchSettings {
	b := &BatchSettings{Window: DefaultBatchWindow, MaxWait: DefaultBatchMaxWait, MaxRequests: DefaultBatchMaxRequests, MaxBytes: DefaultBatchMaxBytes,
		Default: pipeline.InferenceBatch, OnError: BatchOnErrorFail, OnFailure: BatchOnFailureRetry}
	fields, err := objectFields(v)
	if err != nil {
		bad("batch", "%v", err)
		return b
	}
	count := func(k string, raw json.RawMessage, into *int) {
		if json.Unmarshal(raw, into) != nil || *into <= 0 {
			bad("batch."+k, "want a positive whole number, got %s", describe(raw))
		}
	}
	oneOf := func(k string, raw json.RawMessage, into *string, names ...string) {
		if json.Unmarshal(raw, into) != nil || !slices.Contains(names, *into) {
			bad("batch."+k, "want one of %s, got %s", strings.Join(names, ", "), describe(raw))
		}
	}
	liveWithin := false
	for _, k := range slices.Sorted(maps.Keys(fields)) { // problems in a stable order
		raw := fields[k]
		switch k {
		case "default":
			var mode string
			oneOf(k, raw, &mode, string(pipeline.InferenceBatch), string(pipeline.InferenceLive))
			b.Default = pipeline.InferenceMode(mode)
		case "live_within":
			positiveDuration("batch."+k, raw, &b.LiveWithin, bad)
			liveWithin = true
		case "on_error":
			oneOf(k, raw, &b.OnError, BatchOnErrorFail, BatchOnErrorRetry)
		case "on_failure":
			oneOf(k, raw, &b.OnFailure, BatchOnFailureRetry, BatchOnFailureLive)
		case "window":
			positiveDuration("batch."+k, raw, &b.Window, bad)
			if b.Window%time.Hour != 0 {
				bad("batch.window", "want whole hours (the provider's completion_window), got %s", b.Window)
			}
		case "max_wait":
			positiveDuration("batch."+k, raw, &b.MaxWait, bad)
		case "max_requests":
			count(k, raw, &b.MaxRequests)
		case "max_bytes":
			count(k, raw, &b.MaxBytes)
		default:
			bad("batch."+k, "unknown setting; known: %s", strings.Join(batchFields, ", "))
		}
	}
	if !liveWithin {
		b.LiveWithin = b.Window // a batch may take its whole window to answer
	}
	return b
}

// BatchOf returns the batch mode cfg configures, false when it has none
// or cfg is not a valid openai model (New reports why): for those that
// only need to know, the gateway and the metrics among them, without
// building the model.
func BatchOf(cfg config.Model) (BatchSettings, bool) {
	if cfg.Provider != config.ProviderOpenAI {
		return BatchSettings{}, false
	}
	s, err := readSettings(cfg)
	if err != nil || s.batch == nil {
		return BatchSettings{}, false
	}
	return *s.batch, true
}

// Batch returns the model's batch settings, and false when it has no
// batch mode (every step infers live).
func (m *Model) Batch() (BatchSettings, bool) {
	if m.batch == nil {
		return BatchSettings{}, false
	}
	return *m.batch, true
}

// BatchEndpoint is the endpoint of the requests a batch of this package
// carries.
const BatchEndpoint = "/v1/chat/completions"

// BatchLine is req as one line of a batch's input file, named customID:
// the body is the one Infer would send (without streaming). Its model is
// the model the body names, which a step's override may change: a batch
// takes requests of one model only.
func (m *Model) BatchLine(customID string, req model.Request) (line []byte, modelName string, err error) {
	params, err := m.params(req)
	if err != nil {
		return nil, "", fmt.Errorf("openai model %s: build request: %w", m.name, err)
	}
	line, err = json.Marshal(struct {
		CustomID string                      `json:"custom_id"`
		Method   string                      `json:"method"`
		URL      string                      `json:"url"`
		Body     oai.ChatCompletionNewParams `json:"body"`
	}{customID, http.MethodPost, BatchEndpoint, params})
	if err != nil {
		return nil, "", fmt.Errorf("openai model %s: encode request: %w", m.name, err)
	}
	return line, params.Model, nil
}

// BatchAnswer reads the body of a batch's answer line as Infer reads a
// completion, marked Batched.
func (m *Model) BatchAnswer(body []byte) (model.Response, error) {
	a, err := m.parse(body)
	if err == nil {
		var resp model.Response
		if resp, err = a.response(); err == nil {
			resp.Batched = true
			return resp, nil
		}
	}
	return model.Response{}, fmt.Errorf("openai model %s: %w", m.name, err)
}

// UploadBatch uploads content, a batch's input file, and returns the
// file's id.
func (m *Model) UploadBatch(ctx context.Context, name string, content []byte) (string, error) {
	f, err := m.files.New(ctx, oai.FileNewParams{File: oai.File(bytes.NewReader(content), name, "application/jsonl"), Purpose: oai.FilePurposeBatch})
	if err != nil {
		return "", fmt.Errorf("openai model %s: upload batch file: %w", m.name, m.failure(ctx, err))
	}
	return f.ID, nil
}

// JobMetadata is the metadata key that names, on a provider's batch, the
// job it was created for.
const JobMetadata = "stepwise_job"

// CreateBatch creates the batch of the input file fileID for job and
// returns its id. It is not retried: an answer lost after the provider
// created the batch would create a second; the caller looks for the
// first with FindBatch before it creates again.
func (m *Model) CreateBatch(ctx context.Context, fileID, job string, window time.Duration) (string, error) {
	b, err := m.batches.New(ctx, oai.BatchNewParams{
		InputFileID:      fileID,
		Endpoint:         oai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: oai.BatchNewParamsCompletionWindow(strconv.Itoa(int(window.Hours())) + "h"),
		Metadata:         map[string]string{JobMetadata: job},
	}, option.WithMaxRetries(0))
	if err != nil {
		return "", fmt.Errorf("openai model %s: create batch: %w", m.name, m.failure(ctx, err))
	}
	return b.ID, nil
}

// FindBatch returns the id of the batch created for job, found false when
// there is none. It reads the provider's batches newest first, back to
// those created before since (the job's closing time, less a minute for
// the clocks).
func (m *Model) FindBatch(ctx context.Context, job string, since time.Time) (string, bool, error) {
	pages := m.batches.ListAutoPaging(ctx, oai.BatchListParams{Limit: oai.Int(100)})
	for pages.Next() {
		b := pages.Current()
		if b.Metadata[JobMetadata] == job {
			return b.ID, true, nil
		}
		if time.Unix(b.CreatedAt, 0).Before(since.Add(-time.Minute)) {
			break
		}
	}
	if err := pages.Err(); err != nil {
		return "", false, fmt.Errorf("openai model %s: list batches: %w", m.name, m.failure(ctx, err))
	}
	return "", false, nil
}

// BatchState is what a provider's batch says of itself.
type BatchState struct {
	Status       string // validating, in_progress, finalizing, completed, failed, expired, cancelling, cancelled
	OutputFileID string
	ErrorFileID  string
}

// Ended reports whether the batch will change no more.
func (s BatchState) Ended() bool {
	return slices.Contains([]string{"completed", "failed", "expired", "cancelled"}, s.Status)
}

// BatchStatus reads the batch id.
func (m *Model) BatchStatus(ctx context.Context, id string) (BatchState, error) {
	b, err := m.batches.Get(ctx, id)
	if err != nil {
		return BatchState{}, fmt.Errorf("openai model %s: get batch %s: %w", m.name, id, m.failure(ctx, err))
	}
	return BatchState{Status: string(b.Status), OutputFileID: b.OutputFileID, ErrorFileID: b.ErrorFileID}, nil
}

// FileContent downloads the file id (a batch's output or error file).
func (m *Model) FileContent(ctx context.Context, id string) ([]byte, error) {
	res, err := m.files.Content(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("openai model %s: download file %s: %w", m.name, id, m.failure(ctx, err))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("openai model %s: download file %s: %w", m.name, id, err)
	}
	return body, nil
}
