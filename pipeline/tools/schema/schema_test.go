package schema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/tools/schema"
)

const refund = `{
	"type": "object",
	"properties": {
		"amount":   {"type": "number", "minimum": 0},
		"currency": {"type": "string", "enum": ["EUR", "USD"]},
		"order":    {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
		"lines":    {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}}
	},
	"required": ["amount", "currency"],
	"additionalProperties": false
}`

func TestValidate(t *testing.T) {
	cases := []struct {
		name, schema, args, want string
	}{
		{"valid arguments pass", refund, `{"amount": 12.5, "currency": "EUR"}`, ""},
		{"a wrong type names the path and both types", refund, `{"amount": "12", "currency": "EUR"}`,
			`/amount: got string, want number`},
		{"a missing property is named", refund, `{"currency": "EUR"}`, `missing property "amount"`},
		{"missing properties are all named", refund, `{}`, `missing properties "amount", "currency"`},
		{"every problem is reported at once, sorted by path", refund,
			`{"amount": -1, "currency": "GBP", "order": {}, "lines": [{"sku": "a"}, {"sku": 7}, {}], "note": "x"}`,
			`property "note" is not allowed; /amount: must be >= 0, got -1; /currency: must be one of "EUR", "USD", got "GBP"; ` +
				`/lines/1/sku: got number, want string; /lines/2: missing property "sku"; /order: missing property "id"`},
		{"integers are told apart from numbers", refund, `{"amount": 1, "currency": "EUR", "order": {"id": 1.5}}`,
			`/order/id: got number, want integer`},
		{"big integers keep their precision", `{"properties": {"n": {"maximum": 9007199254740993}}}`,
			`{"n": 9007199254740994}`, `/n: must be <= 9007199254740993, got 9007199254740994`},
		{"fractions read as decimals", `{"properties": {"n": {"multipleOf": 0.5}}}`, `{"n": 0.3}`, `/n: must be a multiple of 0.5, got 0.3`},
		{"lengths are plain numbers", `{"properties": {"s": {"maxLength": 1000}}}`, `{"s": "` + strings.Repeat("x", 1001) + `"}`,
			`/s: must be at most 1000 characters long, got 1001`},
		{"an empty schema accepts any object", ``, `{"anything": [1, {"goes": true}]}`, ""},
		{"a null schema accepts any object", `null`, `{"a": 1}`, ""},
		{"an empty schema still wants an object", ``, `[1, 2]`, "arguments must be a JSON object, got array"},
		{"a schema without type still wants an object", `{"properties": {}}`, `"text"`, "arguments must be a JSON object, got string"},
		{"null arguments are refused", refund, `null`, "arguments must be a JSON object, got null"},
		{"empty arguments count as an empty object", `{"required": ["q"]}`, ``, `missing property "q"`},
		{"malformed arguments are reported as such", refund, `{"amount": }`, "arguments are not valid JSON: "},
		{"an anyOf is summarised with each alternative", `{"properties": {"id": {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 3}]}}}`,
			`{"id": "ab"}`, `/id: matches none of the allowed alternatives (anyOf): #1 got string, want integer | #2 must be at least 3 characters long, got 2`},
		{"local references are followed", `{"$defs": {"money": {"type": "number"}}, "properties": {"amount": {"$ref": "#/$defs/money"}}}`,
			`{"amount": true}`, `/amount: got boolean, want number`},
		{"draft-07 schemas are understood", `{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"n": {"type": "number"}}, "properties": {"a": {"$ref": "#/definitions/n"}}}`,
			`{"a": "x"}`, `/a: got string, want number`},
		{"pointer tokens are escaped", `{"properties": {"a/b": {"type": "string"}}}`, `{"a/b": 1}`, `/a~1b: got number, want string`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := schema.Compile(json.RawMessage(c.schema))
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			err = s.Validate(json.RawMessage(c.args))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case c.want == "":
			case err == nil:
				t.Fatalf("Validate = nil, want %q", c.want)
			case strings.HasSuffix(c.want, ": ") && strings.HasPrefix(err.Error(), c.want):
			case !strings.HasSuffix(c.want, ": ") && err.Error() != c.want:
				t.Fatalf("Validate =\n  %s\nwant\n  %s", err, c.want)
			}
		})
	}
}

func TestValidate_problems_are_structured(t *testing.T) {
	err := schema.MustCompile(json.RawMessage(refund)).Validate(json.RawMessage(`{"amount": "1"}`))
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	want := []schema.Problem{
		{Path: "", Message: `missing property "currency"`},
		{Path: "/amount", Message: "got string, want number"},
	}
	if len(ve.Problems) != len(want) {
		t.Fatalf("problems = %+v, want %+v", ve.Problems, want)
	}
	for i := range want {
		if ve.Problems[i] != want[i] {
			t.Fatalf("problem %d = %+v, want %+v", i, ve.Problems[i], want[i])
		}
	}
}

func TestCompile_refuses_broken_schemas(t *testing.T) {
	cases := []struct{ name, schema, want string }{
		{"not JSON", `{"type": `, "schema is not valid JSON"},
		{"a keyword of the wrong type", `{"type": "object", "required": "amount"}`, "invalid schema"},
		{"an unknown type", `{"type": "money"}`, "invalid schema"},
		{"an external reference", `{"properties": {"a": {"$ref": "https://example.com/a.json"}}}`, "external reference"},
		{"a file reference", `{"properties": {"a": {"$ref": "file:///etc/passwd"}}}`, "external reference"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := schema.Compile(json.RawMessage(c.schema))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Compile = %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestSchema_is_safe_for_concurrent_use(t *testing.T) {
	s := schema.MustCompile(json.RawMessage(refund))
	done := make(chan error)
	for i := 0; i < 8; i++ {
		go func() { done <- s.Validate(json.RawMessage(`{"amount": "x", "currency": "EUR"}`)) }()
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err == nil || err.Error() != "/amount: got string, want number" {
			t.Fatalf("Validate = %v", err)
		}
	}
}
