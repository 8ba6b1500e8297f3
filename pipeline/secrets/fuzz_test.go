package secrets_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stepwise-run/stepwise/pipeline/secrets"
)

// fuzzSecret has a character of each kind JSON spells differently: plain
// ASCII, `/` (`\/`), `"` and `\` (escaped in JSON), a control character,
// one in the BMP and one beyond it (a surrogate pair). None of its
// characters is in its mark, "[redacted:K]".
const fuzzSecret = "s/k\"\\é😀\tZ9"

// FuzzRedact_leaves_no_spelling_of_a_secret writes fuzzSecret between a
// fuzzed prefix and suffix (cleared of the secret's characters and of
// backslashes), each of its characters spelled as how says — as itself,
// its short escape, \uXXXX in lower, upper or mixed case — and checks that
// redaction replaces exactly the secret: in free text, in a JSON document
// read by a JSON reader, and in that document taken as free text; and that
// any cut of the redacted text holds no character of the secret.
func FuzzRedact_leaves_no_spelling_of_a_secret(f *testing.F) {
	f.Add("before ", " after", []byte{0}, uint16(0))
	f.Add("", "", []byte{1}, uint16(3))
	f.Add("x", "y", []byte{2, 3, 4}, uint16(12))
	f.Add("<&>", "\x00\u2028", []byte{4, 1, 0, 3}, uint16(513))
	r := secrets.New(map[string]string{"K": fuzzSecret})
	const mark = "[redacted:K]"
	f.Fuzz(func(t *testing.T, prefix, suffix string, how []byte, cutAt uint16) {
		prefix, suffix = scrub(prefix), scrub(suffix)
		want := prefix + mark + suffix

		text := prefix + spell(fuzzSecret, how, false) + suffix
		got := r.String(text)
		if got != want {
			t.Fatalf("String(%q) = %q, want %q", text, got, want)
		}
		n := int(cutAt) % (len(got) + 1)
		if cut := got[:n]; strings.ContainsAny(cut, fuzzSecret) {
			t.Fatalf("the cut %q of %q holds a character of the secret", cut, got)
		}

		doc := `{"k":"` + jsonBody(prefix) + spell(fuzzSecret, how, true) + jsonBody(suffix) + `"}`
		for name, red := range map[string][]byte{"JSON": r.JSON([]byte(doc)), "String": []byte(r.String(doc))} {
			var back map[string]string
			if err := json.Unmarshal(red, &back); err != nil {
				t.Fatalf("%s(%s) = %s: not JSON: %v", name, doc, red, err)
			}
			if back["k"] != want {
				t.Fatalf("%s(%s) decodes to %q, want %q", name, doc, back["k"], want)
			}
		}
	})
}

// scrub removes from s the secret's characters and backslashes, so that
// the only spelling of a secret character in a test text is the secret's.
func scrub(s string) string {
	return strings.Map(func(c rune) rune {
		if c == '\\' || strings.ContainsRune(fuzzSecret, c) {
			return -1
		}
		return c
	}, strings.ToValidUTF8(s, ""))
}

// jsonBody is s as written inside a JSON string.
func jsonBody(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// spell writes each character of s as how[i] (cycled) picks: 0 as itself,
// 1 as its short escape (\uXXXX without one), 2 to 4 as \uXXXX in lower,
// upper and mixed case. In JSON (inJSON), a character a JSON string cannot
// hold as itself gets its short escape.
func spell(s string, how []byte, inJSON bool) string {
	var b strings.Builder
	i := 0
	for _, c := range s {
		mode := byte(0)
		if len(how) > 0 {
			mode = how[i%len(how)] % 5
		}
		i++
		short, hasShort := map[rune]string{'"': `\"`, '\\': `\\`, '/': `\/`, '\t': `\t`}[c]
		needsEscape := c == '"' || c == '\\' || c < 0x20
		switch {
		case mode == 0 && !(inJSON && needsEscape):
			b.WriteRune(c)
		case (mode == 0 || mode == 1) && hasShort:
			b.WriteString(short)
		default:
			for _, unit := range utf16.Encode([]rune{c}) {
				hex := fmt.Sprintf("%04x", unit)
				switch mode {
				case 3:
					hex = strings.ToUpper(hex)
				case 4:
					hex = hex[:2] + strings.ToUpper(hex[2:])
				}
				b.WriteString(`\u` + hex)
			}
		}
	}
	return b.String()
}
