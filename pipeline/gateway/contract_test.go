package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/stepwise-run/stepwise/contracts"
)

// contract is contracts/openapi.yaml, loaded for one test's server: every
// request the test sends and every answer it gets are checked against it
// (validated), so the document cannot drift from the gateway.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

// jsonLinesOnce registers, once for the test binary, a body decoder for
// the JSON Lines media types of POST /v1/runs/batch: each line one item of
// the array its schema describes.
var jsonLinesOnce sync.Once

func loadContract(t *testing.T) *contract {
	t.Helper()
	jsonLinesOnce.Do(func() {
		for _, mt := range []string{"application/x-ndjson", "application/jsonl", "application/x-jsonlines"} {
			openapi3filter.RegisterBodyDecoder(mt, decodeJSONLines)
		}
	})
	doc, err := openapi3.NewLoader().LoadFromData(contracts.OpenAPI)
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("route openapi.yaml: %v", err)
	}
	return &contract{doc: doc, router: router}
}

func decodeJSONLines(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	items := []any{}
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	return items, sc.Err()
}

// serve wraps next so that each exchange is checked once it is over: an
// answer must be what the document says its route answers (status, headers,
// JSON body), a request the document refuses must be refused (4xx), and a
// request the document has no route for must get a 404 or 405 error (or be
// a CORS preflight). A mismatch fails t.
func (c *contract) serve(t *testing.T, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody bytes.Buffer
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(r.Body, &reqBody), r.Body}
		rec := &recordingWriter{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if err := c.check(r, reqBody.Bytes(), rec); err != nil {
			t.Errorf("openapi.yaml and the gateway disagree on %s %s → %d: %v\nrequest body: %.500s\nanswer: %.500s",
				r.Method, r.URL, rec.status(), err, reqBody.Bytes(), rec.body.Bytes())
		}
	})
}

func (c *contract) check(r *http.Request, reqBody []byte, rec *recordingWriter) error {
	status := rec.status()
	req := r.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	if req.Method == http.MethodHead {
		req.Method = http.MethodGet // as the document's description says, and net/http's mux does
	}
	if mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json") {
		req.Header.Set("Content-Type", "application/json") // as the document's description says
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return c.checkUnrouted(r, status, rec, err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if reqErr := openapi3filter.ValidateRequest(context.Background(), in); reqErr != nil && status < 400 {
		return errors.Join(errors.New("the gateway accepted a request the document refuses"), reqErr)
	}
	ct := rec.Header().Get("Content-Type")
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: rec.Header(),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			// Event streams and the console's files are checked by their
			// content type; JSON answers by their schema too.
			ExcludeResponseBody: !strings.HasPrefix(ct, "application/json") || r.Method == http.MethodHead,
		},
	}
	out.SetBodyBytes(rec.body.Bytes())
	return openapi3filter.ValidateResponse(context.Background(), out)
}

// checkUnrouted checks the answer to a request the document has no route
// for: the JSON error of an unknown path (404) or method (405), or a CORS
// preflight's answer.
func (c *contract) checkUnrouted(r *http.Request, status int, rec *recordingWriter, routeErr error) error {
	if r.Method == http.MethodOptions && (status == http.StatusNoContent || status == http.StatusForbidden) {
		return nil
	}
	if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		return errors.Join(errors.New("the document has no route for a request the gateway served"), routeErr)
	}
	var body any
	if err := json.Unmarshal(rec.body.Bytes(), &body); err != nil {
		return err
	}
	return c.doc.Components.Schemas["Error"].Value.VisitJSON(body, openapi3.EnableJSONSchema2020())
}

// recordingWriter keeps a copy of the status and body it writes; it
// flushes as the writer it wraps does, so event streams still stream.
type recordingWriter struct {
	http.ResponseWriter
	mu   sync.Mutex
	code int
	body bytes.Buffer
}

func (w *recordingWriter) WriteHeader(status int) {
	w.mu.Lock()
	if w.code == 0 {
		w.code = status
	}
	w.mu.Unlock()
	w.ResponseWriter.WriteHeader(status)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.body.Write(b)
	w.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) status() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
