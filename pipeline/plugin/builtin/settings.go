package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrInvalidSettings wraps every error a built-in plugin's factory returns
// for settings it cannot use.
var ErrInvalidSettings = errors.New("invalid settings")

// decode reads a plugin's settings into v. Absent or null settings leave v
// as it is; an unknown field is an error, so a misspelt setting is reported
// instead of ignored.
func decode(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSettings, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the settings object", ErrInvalidSettings)
	}
	return nil
}

// problems collects what is wrong with a plugin's settings, so the user sees
// every mistake at once.
type problems []error

func (ps *problems) add(field, format string, args ...any) {
	*ps = append(*ps, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
}

// err joins the problems under ErrInvalidSettings; nil if there are none.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidSettings, errors.Join(ps...))
}

// checkNames reports empty and repeated names in a list setting.
func checkNames(ps *problems, field string, names []string) {
	seen := make(map[string]int, len(names))
	for i, n := range names {
		switch first, dup := seen[n]; {
		case n == "":
			ps.add(fmt.Sprintf("%s[%d]", field, i), "empty tool name")
		case dup:
			ps.add(fmt.Sprintf("%s[%d]", field, i), "%q is already listed at [%d]", n, first)
		default:
			seen[n] = i
		}
	}
}
