package secrets

import (
	"cmp"
	"encoding/json"
	"os"
	"slices"
	"strings"
)

// MinLen is the shortest value redacted: shorter ones ("1", "yes") would
// replace ordinary text.
const MinLen = 6

// Redactor replaces secret values in text. The nil Redactor redacts
// nothing. Safe for concurrent use.
type Redactor struct {
	r *strings.Replacer
}

// FromEnv returns a Redactor of the values of the environment variables
// named (unset, empty and short ones are skipped); nil when none is left.
func FromEnv(names []string) *Redactor {
	values := map[string]string{}
	for _, n := range names {
		values[n] = os.Getenv(n)
	}
	return New(values)
}

// New returns a Redactor of values (name → secret); nil when none is at
// least MinLen long. Longer secrets are matched first, so one that
// contains another is replaced whole.
func New(values map[string]string) *Redactor {
	type secret struct{ name, value string }
	var all []secret
	for name, v := range values {
		if len(v) < MinLen {
			continue
		}
		all = append(all, secret{name, v})
		if esc := jsonEscaped(v); esc != v {
			all = append(all, secret{name, esc})
		}
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b secret) int {
		return cmp.Or(cmp.Compare(len(b.value), len(a.value)), strings.Compare(a.value, b.value))
	})
	pairs := make([]string, 0, 2*len(all))
	for _, s := range all {
		pairs = append(pairs, s.value, "[redacted:"+s.name+"]")
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	return r.r.Replace(s)
}

// JSON returns raw with every secret inside it replaced; the replacement
// holds no character JSON escapes, so valid JSON stays valid.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if r == nil || len(raw) == 0 {
		return raw
	}
	out := r.r.Replace(string(raw))
	if out == string(raw) {
		return raw
	}
	return json.RawMessage(out)
}

// jsonEscaped is v as it appears inside a JSON string.
func jsonEscaped(v string) string {
	b, _ := json.Marshal(v) // a string always marshals
	return string(b[1 : len(b)-1])
}
