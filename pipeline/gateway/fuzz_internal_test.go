package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/model/script"
	"github.com/stepwise-run/stepwise/topics"
)

// The HTTP bodies' parsers, fuzzed (internal: the parsers run before any
// store or broker is touched, so the fuzzer needs neither). Whatever the
// bytes, no parser panics; what the gateway accepts is what the rest of
// the pipeline accepts.

func fuzzServer(t testing.TB) *Server {
	s := &Server{cfg: Config{
		Agents:        func(name string) bool { return name == "assistant" },
		ValidateModel: func(raw json.RawMessage) error { _, err := script.Parse(raw); return err },
	}}
	s.cfg.setDefaults()
	return s
}

func FuzzParseCreate(f *testing.F) {
	for _, seed := range []string{
		`{"agent":"assistant","input":"hi"}`,
		`{"run_id":"r-1","agent":"assistant","input":[{"role":"user","content":"hi"}],"metadata":{"k":1}}`,
		`{"agent":"assistant","input":"x","model":{"provider":"script","turns":[{"text":"a","tool_calls":[{"name":"echo","arguments":{}}]}]}}`,
		`{"agent":"nobody","input":""}`, `[]`, `{"agent":1}`, `{"agent":"assistant","input":[{"role":"tool"}]}`,
	} {
		f.Add([]byte(seed))
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		nr, problems := s.parseCreate(body, false)
		if len(problems) > 0 {
			return
		}
		if nr.run.Agent != "assistant" || len(nr.input) == 0 {
			t.Fatalf("accepted a run without its agent or input: %+v", nr)
		}
	})
}

func FuzzParseBatch(f *testing.F) {
	for _, seed := range []string{
		`[{"agent":"assistant","input":"a"},{"agent":"assistant","input":"b"}]`,
		"{\"agent\":\"assistant\",\"input\":\"a\"}\n{\"agent\":\"assistant\",\"input\":\"b\"}\n",
		`[`, `[1,2]`, "\n\n", `{"agent":"assistant","input":"a"} trailing`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	s := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte, lines bool) {
		mt := mediaJSON
		if lines {
			mt = mediaJSONL
		}
		items, ae := s.splitBatch(body, mt)
		if ae != nil {
			return
		}
		for _, it := range items {
			s.parseCreate(it.raw, true)
		}
	})
}

func FuzzParseDecision(f *testing.F) {
	for _, seed := range []string{
		`{"decision_id":"d-1","call_id":"c-1","action":"resume","payload":{"amount":5},"decided_by":"ops"}`,
		`{"decision_id":"d-2","call_id":"c-1","action":"cancel","reason":"no"}`,
		`{"decision_id":"","call_id":"c-1","action":"resume"}`, `{"action":"maybe"}`, `null`, `{"run_id":"other"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if jsonText(body) != nil { // postDecision reads the body with readBody first
			return
		}
		d, problems := parseDecision(body, "r-1")
		if len(problems) > 0 {
			return
		}
		// The gateway publishes what it accepts (with an id of its own
		// when the body gave none): the step worker must decode it, or
		// it goes to the dead-letter topic.
		if d.DecisionID == "" {
			d.DecisionID = "generated"
		}
		b, err := topics.Encode(d)
		if err != nil {
			t.Fatalf("encode an accepted decision: %v", err)
		}
		if _, err := topics.Decode[topics.Decision](b); err != nil {
			t.Fatalf("the gateway accepted a decision the step worker refuses: %v\n%s", err, b)
		}
	})
}

func FuzzParseCancel(f *testing.F) {
	for _, seed := range []string{``, `{}`, `{"reason":"stop","decided_by":"ops"}`, `{"reason":1}`, `[`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, problems := parseCancel(body)
		if len(problems) > 0 {
			return
		}
		b, err := topics.Encode(topics.Decision{Header: topics.Header{RunID: "r-1"}, DecisionID: "cancel-1",
			Action: topics.ActionCancelRun, DecidedBy: c.DecidedBy, Reason: c.Reason})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := topics.Decode[topics.Decision](b); err != nil {
			t.Fatalf("the gateway accepted a cancel the step worker refuses: %v\n%s", err, b)
		}
	})
}
