package secrets

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"
)

// MinLen is the shortest value redacted: shorter ones ("1", "yes") would
// replace ordinary text.
const MinLen = 6

// Redactor replaces secret values in text. The nil Redactor redacts
// nothing. Safe for concurrent use.
type Redactor struct {
	// literal replaces every value as written: in text without a
	// backslash, the only spelling there is, and many times faster.
	literal *strings.Replacer
	// spelled matches every value in every spelling a JSON reader decodes
	// to it, one group per value, longest value first.
	spelled *regexp.Regexp
	// marks[i] replaces a match of group i+1.
	marks []string
	// long replaces, as written, the values too long to spell
	// (maxSpelledLen); nil when there are none.
	long *strings.Replacer
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

// maxSpelledLen bounds the secrets matched in every JSON spelling: a
// spelled character is about fifteen instructions of the regexp, and a
// value of hundreds of kilobytes (a certificate bundle) would pass
// regexp's size limit (and a match would cost the text's length times the
// value's). A longer value is matched as written only.
const maxSpelledLen = 4096

// New returns a Redactor of values (name → secret); nil when none is at
// least MinLen bytes long. Longer secrets are matched first, so one that
// contains another is replaced whole.
func New(values map[string]string) *Redactor {
	type secret struct{ name, value string }
	var all []secret
	for name, v := range values {
		if len(v) >= MinLen {
			all = append(all, secret{name, v})
		}
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b secret) int {
		return cmp.Or(cmp.Compare(len(b.value), len(a.value)), strings.Compare(a.value, b.value), strings.Compare(a.name, b.name))
	})
	var groups, marks, pairs, longPairs []string
	for _, s := range all {
		mark := "[redacted:" + s.name + "]"
		pairs = append(pairs, s.value, mark)
		if len(s.value) > maxSpelledLen {
			longPairs = append(longPairs, s.value, mark)
			continue
		}
		groups = append(groups, "("+spellings(s.value)+")")
		marks = append(marks, mark)
	}
	r := &Redactor{literal: strings.NewReplacer(pairs...), marks: marks} // literal matches as spelled does on text without a backslash
	if len(groups) > 0 {
		r.spelled = regexp.MustCompile(strings.Join(groups, "|"))
	}
	if len(longPairs) > 0 {
		r.long = strings.NewReplacer(longPairs...)
	}
	return r
}

// String returns s with every secret replaced, in any spelling: as
// written, and with any of its characters written as a JSON string writes
// or may write it (`\/`, `\"`, `\\`, `\n` and the like, `\u00e9` in either
// case, a surrogate pair for a character beyond U+FFFF), as in text that
// quotes JSON (an error body, a log line).
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	if !strings.Contains(s, `\`) {
		return r.literal.Replace(s)
	}
	if r.long != nil {
		s = r.long.Replace(s)
	}
	if r.spelled == nil {
		return s
	}
	found := r.spelled.FindAllStringSubmatchIndex(s, -1)
	if found == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range found {
		b.WriteString(s[last:m[0]])
		b.WriteString(r.marks[matchedGroup(m)])
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// matchedGroup is the index in marks of the group that matched: m holds
// the whole match's bounds, then each group's (-1 when it did not match).
func matchedGroup(m []int) int {
	for g := 1; 2*g < len(m); g++ {
		if m[2*g] >= 0 {
			return g - 1
		}
	}
	panic("secrets: a match of no group") // every alternative is a group
}

// JSON returns raw with every secret inside it replaced. Valid JSON is
// redacted as a JSON reader decodes it: each string (key or value) is
// decoded, redacted with String (so JSON quoted inside a string is
// covered too) and written back, and a number holding a secret becomes a
// string; the result is valid JSON. Anything else is redacted with String.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	if r == nil || len(raw) == 0 {
		return raw
	}
	if !bytes.Contains(raw, []byte(`\`)) && r.literal.Replace(string(raw)) == string(raw) {
		return raw // every string decodes to its bytes as written: none holds a secret
	}
	if !json.Valid(raw) {
		if out := r.String(string(raw)); out != string(raw) {
			return json.RawMessage(out)
		}
		return raw
	}
	var out []byte // nil until a token changes
	last := 0
	for i := 0; i < len(raw); {
		end := tokenEnd(raw, i)
		if end == i {
			i++
			continue
		}
		if red, changed := r.token(raw[i:end]); changed {
			out = append(append(out, raw[last:i]...), red...)
			last = end
		}
		i = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[last:]...)
}

// token redacts one string or number token of valid JSON and reports
// whether it changed; a changed token is written as a JSON string.
func (r *Redactor) token(tok []byte) ([]byte, bool) {
	text := string(tok)
	switch {
	case tok[0] != '"':
	case !strings.Contains(text, `\`):
		text = text[1 : len(text)-1] // nothing to decode
	default:
		if err := json.Unmarshal(tok, &text); err != nil {
			panic(fmt.Sprintf("secrets: a string token of valid JSON does not decode: %v", err))
		}
	}
	red := r.String(text)
	if red == text {
		return nil, false
	}
	b, _ := json.Marshal(red) // a string always marshals
	return b, true
}

// tokenEnd is the end of the string or number token of valid JSON raw that
// starts at i; i itself when none starts there.
func tokenEnd(raw []byte, i int) int {
	switch c := raw[i]; {
	case c == '"':
		for j := i + 1; j < len(raw); j++ {
			switch raw[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(raw)
	case c == '-' || ('0' <= c && c <= '9'):
		j := i + 1
		for j < len(raw) && strings.IndexByte("+-.eE0123456789", raw[j]) >= 0 {
			j++
		}
		return j
	default:
		return i
	}
}

// spellings is a regular expression that matches v in every spelling a
// JSON string decodes to v, and v as written: each character as itself, as
// its short escape if it has one, and as \uXXXX (hex digits in either
// case; a surrogate pair beyond U+FFFF). A byte that is not UTF-8 matches
// any such byte (regexp reads each as U+FFFD).
func spellings(v string) string {
	var b strings.Builder
	for _, c := range v {
		b.WriteString("(?:")
		b.WriteString(regexp.QuoteMeta(string(c)))
		if esc, ok := shortEscape(c); ok {
			b.WriteString(`|\\` + regexp.QuoteMeta(string(esc)))
		}
		b.WriteString("|")
		for _, unit := range utf16.Encode([]rune{c}) {
			b.WriteString(`\\u`)
			for _, d := range fmt.Sprintf("%04x", unit) {
				if 'a' <= d && d <= 'f' {
					fmt.Fprintf(&b, "[%c%c]", d, d-'a'+'A')
				} else {
					b.WriteRune(d)
				}
			}
		}
		b.WriteString(")")
	}
	return b.String()
}

// shortEscape is the letter JSON may write c as after a backslash, if any.
func shortEscape(c rune) (rune, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case '\b':
		return 'b', true
	case '\f':
		return 'f', true
	case '\n':
		return 'n', true
	case '\r':
		return 'r', true
	case '\t':
		return 't', true
	}
	return 0, false
}
