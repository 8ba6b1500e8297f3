package fakebatch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxRequests is how many lines one input file may hold, as on OpenAI.
const MaxRequests = 50_000

// Statuses of a batch, as the API names them.
const (
	StatusValidating = "validating"
	StatusFailed     = "failed"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusExpired    = "expired"
	StatusCancelled  = "cancelled"
)

// LineError is how Server.Answer fails one request: with Status, an HTTP
// error the line's response carries (its body {"error": {...}}), or with
// Status 0, a request that got no response (the line's error field).
type LineError struct {
	Status  int
	Code    string
	Message string
}

// Faults are failures to inject, each counting down as it is used.
type Faults struct {
	mu      sync.Mutex
	uploads int // uploads to answer 500
	creates int // batch creations to answer 500
	failed  int // batches to fail validation as a whole
	expired int // batches to expire, every line unanswered
}

// FailUploads makes the next n file uploads answer 500.
func (f *Faults) FailUploads(n int) { f.set(&f.uploads, n) }

// FailCreates makes the next n batch creations answer 500.
func (f *Faults) FailCreates(n int) { f.set(&f.creates, n) }

// FailBatches makes the next n batches fail (status failed, a
// server_error in errors) however valid their input.
func (f *Faults) FailBatches(n int) { f.set(&f.failed, n) }

// ExpireBatches makes the next n batches expire: no line answered, each
// in the error file as batch_expired.
func (f *Faults) ExpireBatches(n int) { f.set(&f.expired, n) }

func (f *Faults) set(c *int, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*c = n
}

// take uses one of c, reporting whether there was one.
func (f *Faults) take(c *int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *c <= 0 {
		return false
	}
	*c--
	return true
}

// Server is the fake API; serve it with httptest.NewServer(s) and point
// the client's base URL at its URL + "/v1". Answer is required; Delay is
// how long a batch stays in progress (0: it completes at its first read
// after its creation); LiveDelay is how long a live chat completion
// (POST /v1/chat/completions) takes; Now defaults to time.Now.
type Server struct {
	Answer    func(customID string, body json.RawMessage) (json.RawMessage, *LineError)
	Delay     time.Duration
	LiveDelay time.Duration
	Now       func() time.Time
	Faults    Faults

	mu      sync.Mutex
	nextID  int
	files   map[string]*file
	batches map[string]*batch
	order   []string       // batch ids, oldest first
	seen    map[string]int // custom_id → the batches that held it
}

type file struct {
	obj     fileObject
	content []byte
}

type fileObject struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int    `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
	Status    string `json:"status"`
}

// Batch is a batch as the API shows it.
type Batch struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Errors           *batchErrors      `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     string            `json:"output_file_id,omitempty"`
	ErrorFileID      string            `json:"error_file_id,omitempty"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     int64             `json:"in_progress_at,omitempty"`
	ExpiresAt        int64             `json:"expires_at"`
	CompletedAt      int64             `json:"completed_at,omitempty"`
	FailedAt         int64             `json:"failed_at,omitempty"`
	ExpiredAt        int64             `json:"expired_at,omitempty"`
	CancelledAt      int64             `json:"cancelled_at,omitempty"`
	RequestCounts    requestCounts     `json:"request_counts"`
	Metadata         map[string]string `json:"metadata"`
}

type batchErrors struct {
	Object string       `json:"object"`
	Data   []batchError `json:"data"`
}

type batchError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Line    *int   `json:"line"`
}

type requestCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

type batch struct {
	Batch
	lines []inputLine
	due   time.Time // when it completes
	fate  string    // StatusFailed or StatusExpired when a fault decided it, else ""
}

// inputLine is a line of an input file.
type inputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// ServeHTTP serves /v1/files..., /v1/batches... and /v1/chat/completions.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && path == "/chat/completions":
		s.chat(w, r)
	case r.Method == http.MethodPost && path == "/files":
		s.upload(w, r)
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "files":
		s.withFile(w, parts[1], func(f *file) { writeJSON(w, http.StatusOK, f.obj) })
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "files" && parts[2] == "content":
		s.withFile(w, parts[1], func(f *file) {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(f.content)
		})
	case r.Method == http.MethodDelete && len(parts) == 2 && parts[0] == "files":
		s.deleteFile(w, parts[1])
	case r.Method == http.MethodPost && path == "/batches":
		s.create(w, r)
	case r.Method == http.MethodGet && path == "/batches":
		s.list(w)
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "batches":
		s.withBatch(w, parts[1], func(b *batch) { writeJSON(w, http.StatusOK, b.Batch) })
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "batches" && parts[2] == "cancel":
		s.withBatch(w, parts[1], func(b *batch) {
			if b.Status == StatusValidating || b.Status == StatusInProgress {
				b.Status, b.CancelledAt = StatusCancelled, s.now().Unix()
			}
			writeJSON(w, http.StatusOK, b.Batch)
		})
	default:
		apiError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	}
}

func (s *Server) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// id is a new id with prefix, under s.mu.
func (s *Server) id(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s_%06d", prefix, s.nextID)
}

// upload serves POST /v1/files: a multipart form of purpose and file.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if s.Faults.take(&s.Faults.uploads) {
		apiError(w, http.StatusInternalServerError, "server_error", "the upload failed (an injected fault)")
		return
	}
	if err := r.ParseMultipartForm(256 << 20); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "not a multipart form: "+err.Error())
		return
	}
	purpose := r.FormValue("purpose")
	f, hdr, err := r.FormFile("file")
	if err != nil || purpose == "" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "a file and a purpose are required")
		return
	}
	defer f.Close()
	content, err := io.ReadAll(f)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]*file{}
	}
	obj := fileObject{ID: s.id("file"), Object: "file", Bytes: len(content), CreatedAt: s.now().Unix(),
		Filename: hdr.Filename, Purpose: purpose, Status: "processed"}
	s.files[obj.ID] = &file{obj: obj, content: content}
	writeJSON(w, http.StatusOK, obj)
}

func (s *Server) withFile(w http.ResponseWriter, id string, f func(*file)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	got, ok := s.files[id]
	if !ok {
		apiError(w, http.StatusNotFound, "not_found", "no file "+id)
		return
	}
	f(got)
}

func (s *Server) deleteFile(w http.ResponseWriter, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[id]; !ok {
		apiError(w, http.StatusNotFound, "not_found", "no file "+id)
		return
	}
	delete(s.files, id)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
}

// create serves POST /v1/batches.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	if s.Faults.take(&s.Faults.creates) {
		apiError(w, http.StatusInternalServerError, "server_error", "the batch was not created (an injected fault)")
		return
	}
	var req struct {
		InputFileID      string            `json:"input_file_id"`
		Endpoint         string            `json:"endpoint"`
		CompletionWindow string            `json:"completion_window"`
		Metadata         map[string]string `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "invalid_request_error", "malformed body: "+err.Error())
		return
	}
	if req.CompletionWindow != "24h" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("completion_window %q: only 24h is supported", req.CompletionWindow))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.files[req.InputFileID]
	if !ok || in.obj.Purpose != "batch" {
		apiError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("input_file_id %q is not a file of purpose batch", req.InputFileID))
		return
	}
	now := s.now()
	b := &batch{Batch: Batch{ID: s.id("batch"), Object: "batch", Endpoint: req.Endpoint, InputFileID: req.InputFileID,
		CompletionWindow: req.CompletionWindow, Status: StatusInProgress, CreatedAt: now.Unix(), InProgressAt: now.Unix(),
		ExpiresAt: now.Add(24 * time.Hour).Unix(), Metadata: req.Metadata}, due: now.Add(s.Delay)}
	lines, problems := parseInput(in.content, req.Endpoint)
	switch {
	case len(problems) > 0:
		b.Status, b.FailedAt, b.Errors = StatusFailed, now.Unix(), &batchErrors{Object: "list", Data: problems}
	case s.Faults.take(&s.Faults.failed):
		b.Status, b.FailedAt = StatusFailed, now.Unix()
		b.Errors = &batchErrors{Object: "list", Data: []batchError{{Code: "server_error", Message: "the batch failed (an injected fault)"}}}
	case s.Faults.take(&s.Faults.expired):
		b.fate = StatusExpired
	}
	b.lines = lines
	b.RequestCounts.Total = len(lines)
	if s.batches == nil {
		s.batches, s.seen = map[string]*batch{}, map[string]int{}
	}
	s.batches[b.ID] = b
	s.order = append(s.order, b.ID)
	if b.Status != StatusFailed {
		for _, l := range lines {
			s.seen[l.CustomID]++
		}
	}
	writeJSON(w, http.StatusOK, b.Batch)
}

// parseInput reads an input file's lines for endpoint, with the problems
// that fail its validation as the API names them.
func parseInput(content []byte, endpoint string) ([]inputLine, []batchError) {
	var lines []inputLine
	var problems []batchError
	ids := map[string]bool{}
	model := ""
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := n
		var l inputLine
		var body struct {
			Model string `json:"model"`
		}
		switch {
		case json.Unmarshal(sc.Bytes(), &l) != nil || l.CustomID == "" || json.Unmarshal(l.Body, &body) != nil:
			problems = append(problems, batchError{Code: "invalid_json_line", Message: "this line is not a request: custom_id, method, url and body", Line: &line})
		case l.Method != http.MethodPost || l.URL != endpoint:
			problems = append(problems, batchError{Code: "mismatched_endpoint", Message: fmt.Sprintf("the line is %s %s, the batch's endpoint %s", l.Method, l.URL, endpoint), Line: &line})
		case ids[l.CustomID]:
			problems = append(problems, batchError{Code: "duplicate_custom_id", Message: fmt.Sprintf("custom_id %q is used twice", l.CustomID), Line: &line})
		case model != "" && body.Model != model:
			problems = append(problems, batchError{Code: "mismatched_model", Message: fmt.Sprintf("model %q: the file's lines must name one model, %q", body.Model, model), Line: &line})
		default:
			ids[l.CustomID], model = true, body.Model
			lines = append(lines, l)
		}
	}
	switch {
	case len(lines)+len(problems) == 0:
		problems = append(problems, batchError{Code: "empty_file", Message: "the input file has no lines"})
	case len(lines) > MaxRequests:
		problems = append(problems, batchError{Code: "too_many_requests", Message: fmt.Sprintf("%d requests, at most %d", len(lines), MaxRequests)})
	}
	return lines, problems
}

// advance completes b when it is due: each line answered into the output
// or the error file. Under s.mu.
func (s *Server) advance(b *batch) {
	now := s.now()
	if b.Status != StatusInProgress || now.Before(b.due) {
		return
	}
	var out, errs bytes.Buffer
	for _, l := range b.lines {
		o := outputLine{ID: s.id("batch_req"), CustomID: l.CustomID}
		var le *LineError
		if b.fate == StatusExpired {
			le = &LineError{Code: "batch_expired", Message: "This request could not be executed before the completion window expired."}
		} else {
			var body json.RawMessage
			body, le = s.Answer(l.CustomID, l.Body)
			if le == nil {
				o.Response = &lineResponse{StatusCode: http.StatusOK, RequestID: s.id("req"), Body: body}
			}
		}
		switch {
		case le == nil:
			b.RequestCounts.Completed++
			appendLine(&out, o)
			continue
		case le.Status > 0:
			e, _ := json.Marshal(map[string]any{"error": map[string]any{"message": le.Message, "type": "invalid_request_error", "code": le.Code}})
			o.Response = &lineResponse{StatusCode: le.Status, RequestID: s.id("req"), Body: e}
		default:
			o.Error = &lineError{Code: le.Code, Message: le.Message}
		}
		b.RequestCounts.Failed++
		appendLine(&errs, o)
	}
	b.OutputFileID, b.ErrorFileID = s.store(out.Bytes(), b.ID+"_output.jsonl"), s.store(errs.Bytes(), b.ID+"_error.jsonl")
	if b.fate == StatusExpired {
		b.Status, b.ExpiredAt = StatusExpired, now.Unix()
		return
	}
	b.Status, b.CompletedAt = StatusCompleted, now.Unix()
}

// store keeps content as a file of purpose batch_output and returns its
// id; "" for no content, as the API leaves a file it would not fill.
func (s *Server) store(content []byte, name string) string {
	if len(content) == 0 {
		return ""
	}
	obj := fileObject{ID: s.id("file"), Object: "file", Bytes: len(content), CreatedAt: s.now().Unix(), Filename: name,
		Purpose: "batch_output", Status: "processed"}
	s.files[obj.ID] = &file{obj: obj, content: content}
	return obj.ID
}

type outputLine struct {
	ID       string        `json:"id"`
	CustomID string        `json:"custom_id"`
	Response *lineResponse `json:"response"`
	Error    *lineError    `json:"error"`
}

type lineResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

type lineError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func appendLine(b *bytes.Buffer, o outputLine) {
	line, _ := json.Marshal(o)
	b.Write(line)
	b.WriteByte('\n')
}

func (s *Server) withBatch(w http.ResponseWriter, id string, f func(*batch)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.batches[id]
	if !ok {
		apiError(w, http.StatusNotFound, "not_found", "no batch "+id)
		return
	}
	s.advance(b)
	f(b)
}

// list serves GET /v1/batches: every batch, newest first, on one page.
func (s *Server) list(w http.ResponseWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := make([]Batch, 0, len(s.order))
	for _, id := range slices.Backward(s.order) {
		s.advance(s.batches[id])
		data = append(data, s.batches[id].Batch)
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": false})
}

// Batches is every batch created so far, oldest first, as the API shows
// it now.
func (s *Server) Batches() []Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Batch, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.batches[id].Batch)
	}
	return out
}

// Repeated lists the custom_ids that more than one accepted batch held.
func (s *Server) Repeated() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id, n := range s.seen {
		if n > 1 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError writes an error as the API does: {"error": {message, type, code}}.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code, "param": nil}})
}
