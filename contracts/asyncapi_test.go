package contracts_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/stepwise-run/stepwise/contracts"
	"github.com/stepwise-run/stepwise/topics"
)

// decoders decode a payload as each message of asyncapi.yaml, as its
// consumers do. A new message needs a line here (the tests below fail
// without it).
var decoders = map[string]func([]byte) error{
	"StepRequested":     decodeAs[topics.StepRequested],
	"ToolCallRequested": decodeAs[topics.ToolCallRequested],
	"ToolCallFinished":  decodeAs[topics.ToolCallFinished],
	"Decision":          decodeAs[topics.Decision],
	"DecisionOutcome":   decodeAs[topics.DecisionOutcome],
	"RunResult":         decodeAs[topics.RunResult],
	"RunRequested":      decodeAs[topics.RunRequested],
	"RunRequestOutcome": decodeAs[topics.RunRequestOutcome],
	"ApprovalRequested": decodeAs[topics.ApprovalRequested],
	"RunArchived":       decodeAs[topics.RunArchived],
}

func decodeAs[M topics.Message](payload []byte) error {
	_, err := topics.Decode[M](payload)
	return err
}

// asyncMessage is a message of asyncapi.yaml: its name, the golden
// payloads it claims and its payload's schema.
type asyncMessage struct {
	name   string
	golden []string
	schema *jsonschema.Schema
}

// asyncMessages compiles the payload schema of every message of
// asyncapi.yaml that has golden payloads (the dead letter, which carries
// any record as it was, has none).
func asyncMessages(t *testing.T) map[string]asyncMessage {
	t.Helper()
	raw, err := contracts.AsyncAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Messages map[string]struct {
				Golden  []string `json:"x-golden"`
				Payload struct {
					Ref string `json:"$ref"`
				} `json:"payload"`
			} `json:"messages"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7) // AsyncAPI's schema format is a superset of draft 7
	const url = "file:///asyncapi.json"
	if err := c.AddResource(url, value); err != nil {
		t.Fatal(err)
	}
	out := map[string]asyncMessage{}
	for name, m := range doc.Components.Messages {
		if len(m.Golden) == 0 {
			continue
		}
		s, err := c.Compile(url + m.Payload.Ref)
		if err != nil {
			t.Fatalf("message %s: compile %s: %v", name, m.Payload.Ref, err)
		}
		out[name] = asyncMessage{name: name, golden: m.Golden, schema: s}
	}
	return out
}

func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "topics", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func validates(t *testing.T, s *jsonschema.Schema, payload []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		t.Fatalf("golden payload %s: %v", payload, err)
	}
	return s.Validate(v)
}

func TestAsyncAPI_every_golden_payload_has_a_message_that_claims_it(t *testing.T) {
	claimed := map[string]string{}
	for _, m := range asyncMessages(t) {
		for _, g := range m.golden {
			if other, dup := claimed[g]; dup {
				t.Errorf("%s is claimed by %s and %s", g, other, m.name)
			}
			claimed[g] = m.name
		}
	}
	files, err := filepath.Glob(filepath.Join("..", "topics", "testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden payloads in topics/testdata")
	}
	for _, f := range files {
		if _, ok := claimed[filepath.Base(f)]; !ok {
			t.Errorf("golden payload %s has no message in asyncapi.yaml: add it to a message's x-golden", filepath.Base(f))
		}
	}
}

func TestAsyncAPI_golden_payloads_validate_against_their_schema(t *testing.T) {
	for _, m := range asyncMessages(t) {
		for _, g := range m.golden {
			t.Run(g, func(t *testing.T) {
				payload := golden(t, g)
				if err := validates(t, m.schema, payload); err != nil {
					t.Errorf("%s does not validate as %s: %v", g, m.name, err)
				}
				decode, ok := decoders[m.name]
				if !ok {
					t.Fatalf("no decoder for %s in this test's decoders", m.name)
				}
				if err := decode(payload); err != nil {
					t.Errorf("%s does not decode as %s: %v", g, m.name, err)
				}
			})
		}
	}
}

// Removing a field of a golden payload makes the schema refuse it exactly
// when it makes the Go type's Validate refuse it: the schema's required
// fields are the type's.
func TestAsyncAPI_schemas_require_what_Validate_requires(t *testing.T) {
	for _, m := range asyncMessages(t) {
		decode := decoders[m.name]
		if decode == nil {
			t.Errorf("no decoder for %s in this test's decoders", m.name)
			continue
		}
		for _, g := range m.golden {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(golden(t, g), &fields); err != nil {
				t.Fatal(err)
			}
			for field := range fields {
				t.Run(g+"/without_"+field, func(t *testing.T) {
					rest := maps.Clone(fields)
					delete(rest, field)
					payload, err := json.Marshal(rest)
					if err != nil {
						t.Fatal(err)
					}
					schemaErr, goErr := validates(t, m.schema, payload), decode(payload)
					if (schemaErr == nil) != (goErr == nil) {
						t.Errorf("without %s, the schema says %v and Decode[%s] says %v", field, schemaErr, m.name, goErr)
					}
				})
			}
		}
	}
}

// Every message type of package topics (a struct that embeds Header) has a
// message with golden payloads in asyncapi.yaml, and a decoder here.
func TestAsyncAPI_every_topics_message_type_has_a_schema(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, filepath.Join("..", "topics"), func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				if st, isStruct := ts.Type.(*ast.StructType); isStruct && embedsHeader(st) {
					types = append(types, ts.Name.Name)
				}
				return false
			})
		}
	}
	if len(types) == 0 {
		t.Fatal("found no message types in topics")
	}
	msgs := asyncMessages(t)
	slices.Sort(types)
	for _, name := range types {
		if _, ok := msgs[name]; !ok {
			t.Errorf("topics.%s has no message with golden payloads in asyncapi.yaml", name)
		}
		if _, ok := decoders[name]; !ok {
			t.Errorf("topics.%s has no decoder in this test's decoders", name)
		}
	}
}

func embedsHeader(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		if id, ok := f.Type.(*ast.Ident); ok && len(f.Names) == 0 && id.Name == "Header" {
			return true
		}
	}
	return false
}

// Every topic a deployment has is a channel of asyncapi.yaml, and every
// channel is a topic: the addresses are the default prefix's names.
func TestAsyncAPI_channels_are_the_topics(t *testing.T) {
	raw, err := contracts.AsyncAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Channels map[string]struct {
			Address string `json:"address"`
		} `json:"channels"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	names := topics.NewNames("")
	want := append(append(names.Static(), names.Optional()...), names.ToolCalls("{queue}"))
	var got []string
	for _, c := range doc.Channels {
		got = append(got, c.Address)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("channel addresses %v, want the topics %v", got, want)
	}
}
