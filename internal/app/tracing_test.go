package app_test

import (
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

// span is what the test keeps of an exported span.
type span struct {
	service, name        string
	trace, id, parent    string
	runID, operationName string
}

// otlpReceiver is an OTLP/HTTP trace endpoint that keeps what it receives.
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	spans []span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "want an OTLP/HTTP protobuf export at /v1/traces", http.StatusBadRequest)
			return
		}
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		for _, rs := range req.ResourceSpans {
			service := stringAttr(rs.GetResource().GetAttributes(), "service.name")
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					rcv.spans = append(rcv.spans, span{
						service: service, name: s.Name,
						trace: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId), parent: hex.EncodeToString(s.ParentSpanId),
						runID: stringAttr(s.Attributes, "stepwise.run_id"), operationName: stringAttr(s.Attributes, "gen_ai.operation.name"),
					})
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	rcv.url = srv.URL
	return rcv
}

func stringAttr(attrs []*commonpb.KeyValue, key string) string {
	for _, a := range attrs {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

// ofRun returns the spans whose attributes name run id.
func (r *otlpReceiver) ofRun(id string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.runID == id {
			out = append(out, s)
		}
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// A run created at a gateway process, stepped by a step worker process,
// its tools run by a tool worker process and a parked call decided through
// the gateway, is one connected trace: every span of the run has the run's
// trace id, every parent is a span of that trace, and the trace holds the
// run's creation, each step, each inference (with the GenAI attributes),
// ToolGate, each tool execution and the decision, from all three programs.
func TestTracing_one_trace_per_run_across_separate_processes(t *testing.T) {
	bin := programs(t)
	in := newInfra(t)
	otlp := newOTLPReceiver(t)
	cfgPath := writeConfig(t, approvalsConfig)
	env := []string{app.EnvKafkaBrokers + "=" + strings.Join(in.brokers, ","), app.EnvRedisURL + "=" + in.redisURL,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.url, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=100"}
	addr := freeAddr(t)
	base := "http://" + addr
	startProcess(t, filepath.Join(bin, "gateway"), env, "--config", cfgPath, "--http", addr)
	startProcess(t, filepath.Join(bin, "stepworker"), env, "--config", cfgPath)
	startProcess(t, filepath.Join(bin, "toolworker"), env, "--config", cfgPath)
	testinfra.Eventually(t, 30*time.Second, func() bool {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil && res.StatusCode == http.StatusOK
	}, func() string { return "the gateway is not ready" })

	id := createRun(t, base, "r-traced", "approvals", script(call("E", "echo", `{"i":1}`), call("A", "tool_a", `{"n":1}`)))
	waitFor(t, base, id, "waiting", func(v runView) bool { return v.Status == pipeline.RunWaiting })
	decide(t, base, id, map[string]any{"call_id": "A", "action": "resume"})
	assertNaturalEnd(t, waitDone(t, base, id, 30*time.Second), 1)

	want := []string{"gateway/create run", "stepworker/step 0", "stepworker/chat script", "stepworker/tool_gate",
		"toolworker/execute_tool echo", "toolworker/execute_tool tool_a", "stepworker/decision resume", "stepworker/step 1"}
	var spans []span
	testinfra.Eventually(t, 30*time.Second, func() bool {
		spans = otlp.ofRun(id)
		have := make([]string, len(spans))
		for i, s := range spans {
			have[i] = s.service + "/" + s.name
		}
		for _, w := range want {
			if !slices.Contains(have, w) {
				return false
			}
		}
		return true
	}, func() string { return "spans of the run: " + describe(spans) })

	root := spans[slices.IndexFunc(spans, func(s span) bool { return s.name == "create run" })]
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.id] = true
	}
	for _, s := range spans {
		if s.trace != root.trace {
			t.Errorf("span %s/%s is in trace %s, the run's is %s", s.service, s.name, s.trace, root.trace)
		}
		if s.id != root.id && !ids[s.parent] {
			t.Errorf("span %s/%s has parent %s, which is no span of the run", s.service, s.name, s.parent)
		}
		if s.name == "chat script" && s.operationName != "chat" {
			t.Errorf("inference span without gen_ai.operation.name: %+v", s)
		}
	}
	if root.parent != "" && root.parent != "0000000000000000" {
		t.Errorf("the run's root span has a parent: %+v", root)
	}
}

func describe(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString("\n  " + s.service + "/" + s.name + " trace " + s.trace + " parent " + s.parent)
	}
	return b.String()
}
