package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// checkShape walks the JSON form of a configuration beside the Go type it is
// decoded into and reports, with the path of each, every unknown field and
// every value of the wrong kind. encoding/json alone stops at the first
// mistake and names no path for unknown fields; after checkShape passes,
// decoding cannot fail.
//
// Object keys are matched exactly (encoding/json would also accept "Model"
// for "model"). json.RawMessage takes anything; Model takes any extra field,
// which belongs to its provider; Duration checks its own text.
func checkShape(ps *problems, path string, raw json.RawMessage, t reflect.Type) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return // null leaves the zero value, as in encoding/json
	}
	switch t {
	case reflect.TypeFor[json.RawMessage]():
		return
	case reflect.TypeFor[Duration]():
		if err := new(Duration).UnmarshalJSON(raw); err != nil {
			ps.add(path, err.Error())
		}
		return
	case reflect.TypeFor[Model]():
		checkObject(ps, path, raw, reflect.TypeFor[modelFields](), true)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		checkShape(ps, path, raw, t.Elem())
	case reflect.Struct:
		checkObject(ps, path, raw, t, false)
	case reflect.Map:
		var m map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
			ps.add(path, "want a mapping, got "+describe(raw))
			return
		}
		for _, k := range sortedKeys(m) {
			checkShape(ps, field(path, k), m[k], t.Elem())
		}
	case reflect.Slice:
		var items []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
			ps.add(path, "want a list, got "+describe(raw))
			return
		}
		for i, item := range items {
			checkShape(ps, fmt.Sprintf("%s[%d]", path, i), item, t.Elem())
		}
	default:
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			ps.add(path, "want "+kindName(t)+", got "+describe(raw)+boolWordHint(t, raw))
		}
	}
}

// checkObject checks an object against the fields of struct type t. With
// open set, keys t does not know are allowed and left unchecked.
func checkObject(ps *problems, path string, raw json.RawMessage, t reflect.Type, open bool) {
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		ps.add(path, "want a mapping, got "+describe(raw))
		return
	}
	fields := jsonFields(t)
	for _, k := range sortedKeys(m) {
		f, ok := fields[k]
		if !ok {
			switch {
			case open:
			case len(fields) == 0:
				ps.add(field(path, k), "unknown field (this mapping takes no fields)")
			default:
				ps.add(field(path, k), "unknown field (known: "+strings.Join(sortedKeys(fields), ", ")+")")
			}
			continue
		}
		checkShape(ps, field(path, k), m[k], f.Type)
	}
}

// jsonFields maps the JSON names of t's exported fields to the fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := make(map[string]reflect.StructField, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// kindName says in YAML terms what a Go type wants.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "a " + t.Kind().String()
	}
}

// describe says in YAML terms what a JSON value is, quoting short scalars.
func describe(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "a mapping"
	case '[':
		return "a list"
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil && len(s) <= 40 {
			return "string " + strconv.Quote(s)
		}
		return "a string"
	case 't', 'f':
		return "boolean " + string(raw)
	default:
		if len(raw) <= 40 {
			return "number " + string(raw)
		}
		return "a number"
	}
}
