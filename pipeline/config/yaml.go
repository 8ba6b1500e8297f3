package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlToJSON turns a configuration file into JSON, reading it as YAML 1.2:
// only true and false are booleans. YAML 1.1 also reads y, n, yes, no, on
// and off as booleans, keys included, so a tool's schema with properties x
// and y would lose y to a key "true". JSON is YAML 1.2, so JSON input reads
// as itself. Anchors, aliases and merge keys (<<) are resolved; a duplicate
// key is an error. Empty input, or only comments, gives null.
func yamlToJSON(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 {
		return []byte("null"), nil
	}
	timestampsAsWritten(&doc)
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, err
	}
	var ps problems
	v = jsonValue(&ps, "", v)
	if len(ps) > 0 {
		// Maps are walked in no set order; sorted, the message is the same
		// every time.
		slices.SortFunc(ps, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return nil, ps.err()
	}
	return json.Marshal(v)
}

// timestampsAsWritten makes every scalar that looks like a timestamp a
// string, as written. yaml.v3 would decode it into a time.Time, which JSON
// writes in another form: 2024-01-01 would become "2024-01-01T00:00:00Z".
// Aliases share their anchor's node, so they follow.
func timestampsAsWritten(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp" {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		timestampsAsWritten(c)
	}
}

// jsonValue makes a decoded YAML value one json.Marshal takes: a mapping
// with keys that are not strings (1: or true:) gets them as text. An
// infinity or NaN, which JSON has no way to write, is a problem at its path.
func jsonValue(ps *problems, path string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonValue(ps, field(path, k), e)
		}
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			key, ok := jsonKey(ps, path, k)
			if !ok {
				continue
			}
			if _, twice := m[key]; twice {
				ps.add(field(path, key), "two keys read as "+strconv.Quote(key)+"; a key that is not a string is read as its text")
				continue
			}
			m[key] = jsonValue(ps, field(path, key), e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = jsonValue(ps, fmt.Sprintf("%s[%d]", path, i), e)
		}
	case float64:
		if msg := notFinite(v); msg != "" {
			ps.add(path, msg)
		}
	}
	return v
}

// jsonKey is the text of a mapping key that is not a string, as
// sigs.k8s.io/yaml wrote it: 1 is "1", true is "true".
func jsonKey(ps *problems, path string, k any) (string, bool) {
	switch k := k.(type) {
	case string:
		return k, true
	case bool:
		return strconv.FormatBool(k), true
	case int:
		return strconv.Itoa(k), true
	case int64: // an int that does not fit a 32-bit int
		return strconv.FormatInt(k, 10), true
	case uint64:
		return strconv.FormatUint(k, 10), true
	case float64:
		if msg := notFinite(k); msg != "" {
			ps.add(path, "a key: "+msg)
			return "", false
		}
		return strconv.FormatFloat(k, 'g', -1, 64), true
	case nil:
		ps.add(path, "a key is null (~, null or nothing); quote it to mean the text")
	default:
		ps.add(path, fmt.Sprintf("a key of type %T; quote it to mean the text", k))
	}
	return "", false
}

// notFinite says why JSON cannot write f; "" if it can.
func notFinite(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "JSON has no infinity (.inf); write a number, or quote it to mean the text"
	case math.IsInf(f, -1):
		return "JSON has no negative infinity (-.inf); write a number, or quote it to mean the text"
	case math.IsNaN(f):
		return "JSON has no NaN (.nan); write a number, or quote it to mean the text"
	}
	return ""
}

// boolWordHint explains a YAML 1.1 boolean word (y, yes, n, no, on, off)
// found where true or false is wanted: it reads as a string now, and a
// setting that takes a boolean does not guess what the string meant.
func boolWordHint(t reflect.Type, raw json.RawMessage) string {
	var s string
	if t.Kind() != reflect.Bool || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "on", "off":
		return " (YAML 1.2 reads " + s + " as a string: write true or false)"
	}
	return ""
}
