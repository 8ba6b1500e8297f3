package app

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestLogger_json_format_writes_one_object_per_line(t *testing.T) {
	t.Setenv(EnvLogFormat, "json")
	t.Setenv(EnvLogLevel, "debug")
	var buf bytes.Buffer
	newLogger(&buf, "stepworker").Debug("step claimed", "run_id", "r-1", "step", 2)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	if rec["msg"] != "step claimed" || rec["program"] != "stepworker" || rec["run_id"] != "r-1" || rec["step"] != float64(2) || rec["level"] != "DEBUG" {
		t.Fatalf("record %v", rec)
	}
	t.Setenv(EnvLogFormat, "")
	buf.Reset()
	newLogger(&buf, "gateway").Info("up")
	if json.Valid(buf.Bytes()) || !bytes.Contains(buf.Bytes(), []byte("msg=up program=gateway")) {
		t.Fatalf("text: %q", buf.String())
	}
}
