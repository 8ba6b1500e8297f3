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
