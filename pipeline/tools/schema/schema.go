package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	sjson "github.com/segmentio/encoding/json"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// resourceURL names the schema inside its private compiler; references to
// anything else fail instead of loading.
const resourceURL = "urn:stepwise:tool-parameters"

// Schema is a compiled tool-parameters schema. The zero value is not usable;
// get one from Compile. A Schema is immutable and safe for concurrent use.
type Schema struct {
	compiled *jsonschema.Schema // nil: any object
}

// Compile compiles raw, a JSON Schema for a tool's arguments. An empty raw
// (or null, or {}) accepts any object. An error says what is wrong with the
// schema; it is the configuration's or the tool server's mistake, not the
// model's.
func Compile(raw json.RawMessage) (*Schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte("{}")) {
		return &Schema{}, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(resourceURL, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	compiled, err := c.Compile(resourceURL)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	return &Schema{compiled: compiled}, nil
}

// MustCompile is Compile for schemas known to be valid, such as literals in
// tests; it panics on error.
func MustCompile(raw json.RawMessage) *Schema {
	s, err := Compile(raw)
	if err != nil {
		panic(err)
	}
	return s
}

// Validate checks args, a call's arguments, and returns nil or a
// *ValidationError listing every problem. Empty args count as {}.
func (s *Schema) Validate(args json.RawMessage) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	v, err := decodeArgs(args)
	if err != nil {
		return &ValidationError{Problems: []Problem{{Message: "arguments are not valid JSON: " + jsonError(err)}}}
	}
	if _, ok := v.(map[string]any); !ok {
		return &ValidationError{Problems: []Problem{{Message: "arguments must be a JSON object, got " + typeName(v)}}}
	}
	if s.compiled == nil {
		return nil
	}
	err = s.compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Problems: []Problem{{Message: err.Error()}}}
	}
	return &ValidationError{Problems: problems(ve)}
}

// decodeArgs reads arguments as the validator takes them, numbers as
// json.Number. segmentio's parser reads them whole, without the
// encoding/json Decoder jsonschema's own reader makes for each (its buffer
// alone is 512 bytes, for arguments validated at every step); arguments it
// refuses are read again by jsonschema's reader, for its error.
func decodeArgs(args []byte) (any, error) {
	var v any
	rest, err := sjson.Parse(args, &v, sjson.UseNumber)
	if err == nil && len(bytes.TrimSpace(rest)) == 0 {
		return v, nil
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(args))
}

// Problem is one thing wrong with the arguments. Path is a JSON Pointer into
// the arguments ("/items/0/sku"); empty for the arguments as a whole.
type Problem struct {
	Path    string
	Message string
}

// String renders p as "path: message", or the message alone at the root.
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// ValidationError lists everything wrong with a call's arguments, sorted by
// path.
type ValidationError struct {
	Problems []Problem
}

// Error joins the problems with "; ".
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// problems flattens the library's error tree to its leaves: the keyword
// failures that say what to change. Groups (allOf, a $ref, the schema as a
// whole) only carry their causes. Duplicates are dropped.
func problems(root *jsonschema.ValidationError) []Problem {
	var out []Problem
	seen := map[Problem]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			if msg, ok := summary(e); ok {
				add(&out, seen, Problem{Path: pointer(e.InstanceLocation), Message: msg})
				return
			}
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		add(&out, seen, Problem{Path: pointer(e.InstanceLocation), Message: describe(e.ErrorKind)})
	}
	walk(root)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Message < out[j].Message
	})
	return out
}

func add(out *[]Problem, seen map[Problem]bool, p Problem) {
	if !seen[p] {
		seen[p] = true
		*out = append(*out, p)
	}
}

// summary gives one message for an anyOf/oneOf whose alternatives all failed:
// listing every alternative's complaints would mostly be noise. A oneOf that
// matched more than one alternative has no causes and is a leaf.
func summary(e *jsonschema.ValidationError) (string, bool) {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf:
		return "matches none of the allowed alternatives (anyOf): " + alternatives(e), true
	case *kind.OneOf:
		return "matches none of the allowed alternatives (oneOf): " + alternatives(e), true
	}
	return "", false
}

// alternatives renders why each alternative failed, in order, briefly.
func alternatives(e *jsonschema.ValidationError) string {
	parts := make([]string, 0, len(e.Causes))
	base := pointer(e.InstanceLocation)
	for i, c := range e.Causes {
		ps := problems(c)
		msgs := make([]string, len(ps))
		for j, p := range ps {
			p.Path = strings.TrimPrefix(p.Path, base)
			msgs[j] = p.String()
		}
		parts = append(parts, fmt.Sprintf("#%d %s", i+1, strings.Join(msgs, ", ")))
	}
	return strings.Join(parts, " | ")
}

// english prints the library's messages for the rarer keywords; it holds no
// state that changes.
var english = message.NewPrinter(language.English)

// describe words a keyword failure the way a model can act on it: what the
// value must be, then what it got. Rare keywords keep the library's English.
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		return fmt.Sprintf("got %s, want %s", k.Got, strings.Join(k.Want, " or "))
	case *kind.Required:
		if len(k.Missing) == 1 {
			return fmt.Sprintf("missing property %q", k.Missing[0])
		}
		return "missing properties " + quoted(k.Missing)
	case *kind.AdditionalProperties:
		if len(k.Properties) == 1 {
			return fmt.Sprintf("property %q is not allowed", k.Properties[0])
		}
		return "properties " + quoted(k.Properties) + " are not allowed"
	case *kind.FalseSchema:
		return "not allowed here"
	case *kind.Enum:
		if len(k.Want) == 1 {
			return "must be " + literal(k.Want[0]) + ", got " + literal(k.Got)
		}
		want := make([]string, len(k.Want))
		for i, v := range k.Want {
			want[i] = literal(v)
		}
		return "must be one of " + strings.Join(want, ", ") + ", got " + literal(k.Got)
	case *kind.Const:
		return "must be " + literal(k.Want) + ", got " + literal(k.Got)
	case *kind.Minimum:
		return fmt.Sprintf("must be >= %s, got %s", number(k.Want), number(k.Got))
	case *kind.Maximum:
		return fmt.Sprintf("must be <= %s, got %s", number(k.Want), number(k.Got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("must be > %s, got %s", number(k.Want), number(k.Got))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("must be < %s, got %s", number(k.Want), number(k.Got))
	case *kind.MultipleOf:
		return fmt.Sprintf("must be a multiple of %s, got %s", number(k.Want), number(k.Got))
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long, got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long, got %d", k.Want, k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items, got %d", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items, got %d", k.Want, k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d properties, got %d", k.Want, k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d properties, got %d", k.Want, k.Got)
	case *kind.Pattern:
		return fmt.Sprintf("%q does not match the pattern %q", k.Got, k.Want)
	case *kind.Format:
		return fmt.Sprintf("%s is not a valid %s: %v", literal(k.Got), k.Want, k.Err)
	}
	return k.LocalizedString(english)
}

// literal renders a JSON value as JSON, cut short when long.
func literal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// number renders an exact number: integers in full, others as the shortest
// decimal that reads back to the same float64.
func number(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// pointer renders an instance location as a JSON Pointer (RFC 6901).
func pointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		sb.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return sb.String()
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64, int:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// jsonError words a JSON syntax error without Go type names.
func jsonError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	return err.Error()
}

// noLoader refuses every external reference, so a schema from a
// configuration or a tool server cannot make the worker read files or fetch
// URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external reference %q is not supported: put the definition under $defs", url)
}
