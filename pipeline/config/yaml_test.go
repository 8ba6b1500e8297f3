package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

// canonical is JSON with its keys sorted and its numbers as written, to
// compare what a file gave with what it should have.
func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// parameters parses a file with one tool t and returns its parameters.
func parameters(t *testing.T, yaml string) string {
	t.Helper()
	cfg, err := config.Parse([]byte("tools:\n  t:\n    executor: {builtin: echo}\n    parameters:\n" + yaml))
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := cfg.Tool("t")
	if !ok {
		t.Fatal("tool t missing")
	}
	return canonical(t, tool.Parameters)
}

func TestParse_reads_YAML_1_2_so_y_n_yes_no_on_off_stay_strings(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{
			name: "a schema with coordinates x and y and an enum of words",
			yaml: `
      type: object
      properties:
        x: {type: number}
        y: {type: number}
        answer: {type: string, enum: [yes, no, on, off]}
      required: [x, y]
`,
			want: `{"properties":{"answer":{"enum":["yes","no","on","off"],"type":"string"},"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"],"type":"object"}`,
		},
		{
			name: "keys at every depth and in any case",
			yaml: `
      n: {Y: {on: [{OFF: N, yes: No}]}}
      y: [y, Y, n, N, yes, Yes, YES, no, On, oFF]
`,
			want: `{"n":{"Y":{"on":[{"OFF":"N","yes":"No"}]}},"y":["y","Y","n","N","yes","Yes","YES","no","On","oFF"]}`,
		},
		{
			name: "true and false are still booleans",
			yaml: "      {a: true, b: false, c: True, d: FALSE, e: \"true\"}\n",
			want: `{"a":true,"b":false,"c":true,"d":false,"e":"true"}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := parameters(t, c.yaml); got != c.want {
				t.Errorf("parameters = %s\nwant         %s", got, c.want)
			}
		})
	}
}

func TestParse_keeps_y_and_on_in_a_models_own_settings(t *testing.T) {
	cfg, err := config.Parse([]byte(`
agents:
  a:
    model:
      provider: script
      turns: [{tool_calls: [{name: echo, arguments: {x: 1, y: 2, on: off}}]}]
    tools: [echo]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := canonical(t, cfg.Agents["a"].Model.Raw)
	want := `{"provider":"script","turns":[{"tool_calls":[{"arguments":{"on":"off","x":1,"y":2},"name":"echo"}]}]}`
	if got != want {
		t.Errorf("model = %s\nwant    %s", got, want)
	}
}

func TestParse_reads_keys_that_are_not_strings_as_their_text(t *testing.T) {
	got := parameters(t, "      {1: a, -2: b, 1.5: c, true: d, false: e, 18446744073709551615: f, x: g}\n")
	want := `{"-2":"b","1":"a","1.5":"c","18446744073709551615":"f","false":"e","true":"d","x":"g"}`
	if got != want {
		t.Errorf("parameters = %s\nwant         %s", got, want)
	}
}

func TestParse_keeps_timestamps_and_large_integers_as_written(t *testing.T) {
	got := parameters(t, `
      since: &day 2024-01-01
      until: 2001-12-14t21:59:43.10-05:00
      again: *day
      2024-02-29: leap
      max_int64: 9223372036854775807
      min_int64: -9223372036854775808
      max_uint64: 18446744073709551615
      hex: 0x1F
`)
	want := `{"2024-02-29":"leap","again":"2024-01-01","hex":31,"max_int64":9223372036854775807,"max_uint64":18446744073709551615,"min_int64":-9223372036854775808,"since":"2024-01-01","until":"2001-12-14t21:59:43.10-05:00"}`
	if got != want {
		t.Errorf("parameters = %s\nwant         %s", got, want)
	}
}

func TestParse_resolves_anchors_aliases_and_merge_keys(t *testing.T) {
	cfg, err := config.Parse([]byte(`
agents:
  a:
    model: &script {provider: script}
    tools: &tools [t1, t2]
  b:
    model: *script
    tools: *tools
tools:
  t1:
    executor: &echo {builtin: echo}
    parameters: &schema {type: object, properties: {y: {type: number}}}
  t2:
    executor: *echo
    parameters:
      <<: *schema
      type: object
      required: [y]
`))
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Agents["b"]
	if b.Model.Provider != config.ProviderScript || strings.Join(b.Tools, ",") != "t1,t2" {
		t.Errorf("agent b = %+v", b)
	}
	if got := cfg.Tools["t2"].Executor.Builtin; got != "echo" {
		t.Errorf("t2 executor builtin = %q", got)
	}
	got := canonical(t, cfg.Tools["t2"].Parameters)
	want := `{"properties":{"y":{"type":"number"}},"required":["y"],"type":"object"}`
	if got != want {
		t.Errorf("t2 parameters = %s\nwant            %s", got, want)
	}
}

func TestParse_refuses_what_JSON_cannot_hold_or_a_key_twice(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"a duplicate key at the top", "agents: {}\nagents: {}\n", `mapping key "agents" already defined`},
		{"a duplicate key in a schema", "tools:\n  t:\n    executor: {builtin: echo}\n    parameters: {properties: {y: {}, y: {}}}\n", `mapping key "y" already defined`},
		{"a duplicate key through a merge", "tools:\n  t: &t {executor: {builtin: echo}}\n  t: {<<: *t}\n", `mapping key "t" already defined`},
		{"a boolean key that is also written as text", "tools:\n  t:\n    executor: {builtin: echo}\n    parameters: {True: a, \"true\": b}\n", `tools.t.parameters.true: two keys read as "true"`},
		{"infinity", "tools:\n  t:\n    executor: {builtin: echo}\n    parameters: {maximum: .inf}\n", "tools.t.parameters.maximum: JSON has no infinity (.inf)"},
		{"negative infinity in a list", "tools:\n  t:\n    executor: {builtin: echo}\n    parameters: {enum: [1, -.Inf]}\n", "tools.t.parameters.enum[1]: JSON has no negative infinity (-.inf)"},
		{"NaN", "tools:\n  t:\n    executor: {builtin: echo}\n    parameters: {default: .NaN}\n", "tools.t.parameters.default: JSON has no NaN (.nan)"},
		{"an infinite key", "tools:\n  t:\n    executor: {builtin: echo}\n    parameters: {.inf: x}\n", "tools.t.parameters: a key: JSON has no infinity (.inf)"},
		{"a null key", "tools:\n  t:\n    executor: {builtin: echo}\n    parameters: {~: x}\n", "tools.t.parameters: a key is null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.yaml))
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want an ErrInvalid holding %q", err, c.want)
			}
		})
	}
}

func TestParse_reports_every_value_JSON_cannot_hold_in_order(t *testing.T) {
	_, err := config.Parse([]byte("tools:\n  t:\n    executor: {builtin: echo}\n    parameters: {c: [-.inf], b: .nan, a: .inf}\n"))
	want := []string{
		"tools.t.parameters.a: JSON has no infinity (.inf); write a number, or quote it to mean the text",
		"tools.t.parameters.b: JSON has no NaN (.nan); write a number, or quote it to mean the text",
		"tools.t.parameters.c[0]: JSON has no negative infinity (-.inf); write a number, or quote it to mean the text",
	}
	if got := problemLines(err); !slices.Equal(got, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !errors.Is(err, config.ErrInvalid) {
		t.Errorf("error does not match ErrInvalid")
	}
}

func TestParse_require_signature_takes_true_or_false_not_yes_or_no(t *testing.T) {
	const producers = "  producers: {gateway: {key_env: GATEWAY_KEY}}\n"
	for _, word := range []string{"yes", "no", "y", "N", "on", "Off", "YES"} {
		_, err := config.Parse([]byte("decisions:\n  require_signature: " + word + "\n" + producers))
		want := `decisions.require_signature: want true or false, got string "` + word + `" (YAML 1.2 reads ` + word + ` as a string: write true or false)`
		if !errors.Is(err, config.ErrInvalid) || err.Error() != want {
			t.Errorf("%s: err = %v\nwant %s", word, err, want)
		}
	}

	_, err := config.Parse([]byte("decisions:\n  require_signature: maybe\n" + producers))
	if want := `decisions.require_signature: want true or false, got string "maybe"`; err == nil || err.Error() != want {
		t.Errorf("maybe: err = %v, want %s", err, want)
	}

	for word, want := range map[string]bool{"true": true, "false": false} {
		cfg, err := config.Parse([]byte("decisions:\n  require_signature: " + word + "\n" + producers))
		if err != nil {
			t.Fatalf("%s: %v", word, err)
		}
		if cfg.Decisions.RequireSignature != want {
			t.Errorf("%s: require_signature = %v", word, cfg.Decisions.RequireSignature)
		}
	}
}

func TestParse_reads_JSON_as_it_reads_YAML(t *testing.T) {
	cfg, err := config.Parse([]byte("{\n\t\"tools\": {\"t\": {\n\t\t\"executor\": {\"builtin\": \"echo\"},\n" +
		"\t\t\"parameters\": {\"properties\": {\"y\": {\"enum\": [\"yes\", \"no\", 1e3, null]}}}\n\t}}\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := canonical(t, cfg.Tools["t"].Parameters)
	want := `{"properties":{"y":{"enum":["yes","no",1000,null]}}}`
	if got != want {
		t.Errorf("parameters = %s\nwant         %s", got, want)
	}
}
