package secrets_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/secrets"
)

func TestRedactor_replaces_values_raw_and_inside_JSON(t *testing.T) {
	r := secrets.New(map[string]string{
		"TOKEN": `tok"en\123`, // escapes in JSON
		"LONG":  "abcdef-123456",
		"SHORT": "abcdef", // a prefix of LONG: LONG wins where both fit
		"TINY":  "1",      // too short: ignored
	})
	if got := r.String(`header tok"en\123 and abcdef-123456 and abcdef, 1`); got != "header [redacted:TOKEN] and [redacted:LONG] and [redacted:SHORT], 1" {
		t.Fatalf("String: %q", got)
	}
	raw, _ := json.Marshal(map[string]string{"echo": `tok"en\123`, "k": "abcdef-123456"})
	out := r.JSON(raw)
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["echo"] != "[redacted:TOKEN]" || back["k"] != "[redacted:LONG]" {
		t.Fatalf("JSON: %s (%v)", out, err)
	}
	var none *secrets.Redactor
	if none.String("abcdef") != "abcdef" || string(none.JSON([]byte(`"x"`))) != `"x"` {
		t.Fatal("the nil Redactor changed text")
	}
	if secrets.New(map[string]string{"A": "123"}) != nil {
		t.Fatal("only short values, yet a Redactor")
	}
}

func TestHandler_redacts_messages_and_attributes(t *testing.T) {
	r := secrets.New(map[string]string{"KEY": "sk-secret-42"})
	var buf bytes.Buffer
	log := slog.New(secrets.Handler(slog.NewTextHandler(&buf, nil), r)).With("auth", "Bearer sk-secret-42")
	log.Info("sent sk-secret-42", "err", errors.New("401: bad key sk-secret-42"), slog.Group("req", "h", "sk-secret-42"), "n", 3)
	if s := buf.String(); strings.Contains(s, "sk-secret-42") || strings.Count(s, "[redacted:KEY]") != 4 || !strings.Contains(s, "n=3") {
		t.Fatalf("log: %s", s)
	}
}

func TestRedactor_replaces_every_spelling_a_JSON_reader_decodes(t *testing.T) {
	r := secrets.New(map[string]string{"TOKEN": "sk/ab-é😀-42"})
	const mark = "[redacted:TOKEN]"
	for _, tc := range []struct{ name, text string }{
		{"as written", `sk/ab-é😀-42`},
		{"slash escaped", `sk\/ab-é😀-42`},
		{"every character as \\u, lower case", `\u0073\u006b\u002f\u0061\u0062\u002d\u00e9\ud83d\ude00\u002d\u0034\u0032`},
		{"upper and mixed case hex", `sk\u002Fab-\u00E9\uD83D\uDe00-42`},
		{"in a JSON error body", `HTTP 403: {"error":"token sk\/ab-\u00e9\ud83d\ude00-42 refused"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.String(tc.text); strings.Contains(got, "42") || !strings.Contains(got, mark) {
				t.Errorf("String(%q) = %q", tc.text, got)
			}
			doc, _ := json.Marshal(map[string]string{"echo": tc.text})
			var back map[string]string
			if err := json.Unmarshal(r.JSON(doc), &back); err != nil || strings.Contains(back["echo"], "42") {
				t.Errorf("JSON(%s) = %s (%v)", doc, r.JSON(doc), err)
			}
		})
	}
}

func TestRedactor_JSON_redacts_what_a_reader_decodes_and_stays_valid(t *testing.T) {
	r := secrets.New(map[string]string{"PIN": "123456", "WORD": "Abcdef"})
	for _, tc := range []struct{ name, in, want string }{
		{"a key and a value", `{"Abcdef":"x \u0041bcdef y"}`, `{"[redacted:WORD]":"x [redacted:WORD] y"}`},
		{"a number becomes a string", `{"n":91234567}`, `{"n":"9[redacted:PIN]7"}`},
		{"text spelling it escaped, in a string, stays valid", `["\\u0041bcdef"]`, `["[redacted:WORD]"]`},
		{"JSON quoted inside a string", `{"body":"{\"t\":\"\\u0041bcdef\"}"}`, `{"body":"{\"t\":\"[redacted:WORD]\"}"}`},
		{"no secret: unchanged", `{ "a" : [1, 2.5e3, "x\n"] }`, `{ "a" : [1, 2.5e3, "x\n"] }`},
		{"not JSON: read as text", `oops \u0041bcdef`, `oops [redacted:WORD]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(r.JSON(json.RawMessage(tc.in)))
			if got != tc.want {
				t.Errorf("JSON(%s) = %s, want %s", tc.in, got, tc.want)
			}
			if json.Valid([]byte(tc.in)) && !json.Valid([]byte(got)) {
				t.Errorf("JSON(%s) = %s: no longer valid", tc.in, got)
			}
		})
	}
}

// A value too long to match in every spelling (a certificate bundle) is
// still redacted as written, and New does not fail on it.
func TestRedactor_a_very_long_secret_is_redacted_as_written(t *testing.T) {
	bundle := strings.Repeat("MIIDdzCCAl+gAwIBAgIE", 20000) // 400 kB
	r := secrets.New(map[string]string{"CA_BUNDLE": bundle, "TOKEN": "tok-0123456789"})
	if got := r.String("ca=" + bundle + " t=tok\\u002d0123456789"); got != "ca=[redacted:CA_BUNDLE] t=[redacted:TOKEN]" {
		t.Fatalf("got %.80q", got)
	}
}
