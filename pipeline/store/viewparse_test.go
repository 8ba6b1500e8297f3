package store

import (
	"encoding/json"
	"reflect"
	"testing"
)

// parseView reads what json.Unmarshal reads: where it accepts an input,
// encoding/json accepts it too and decodes the same view; and it accepts
// every view encoding/json writes.
func FuzzParseView(f *testing.F) {
	for _, seed := range []string{
		`{"run":["status","running","model","{\"a\":\"\\u00e9\/\"}"],"ids":["c1"],"calls":[["status","succeeded","result","{\"ok\":true}"]]}`,
		`{"run":[],"ids":[],"calls":[]}`, `{ "run" : [ "a" , "b" ] , "calls" : [ [ ] , null ] }`, `{}`, `{"run":null}`,
		`{"run":["\u00e9","\ud83d\ude00","x\"y"]}`, "{\"run\":[\"\xff\"]}", `{"run":["a"],"run":["b"]}`,
		`{"RUN":["a"]}`, `{"run":["a",null]}`, `{"run":["a\x01"]}`, `{"run":["a"]} x`, `{"ids":["a\`, `[]`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := parseView(raw)
		if err == nil {
			var want viewWire
			if jerr := json.Unmarshal(raw, &want); jerr != nil {
				t.Fatalf("parseView(%q) accepted what encoding/json refuses: %v", raw, jerr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("parseView(%q) = %#v, encoding/json reads %#v", raw, got, want)
			}
		}
		// Whatever encoding/json makes of the input, written back out, is
		// read back the same.
		var w viewWire
		if json.Unmarshal(raw, &w) != nil {
			return
		}
		out, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseView(out)
		if err != nil {
			t.Fatalf("parseView(%s) of encoding/json's own output: %v", out, err)
		}
		if !reflect.DeepEqual(back, w) {
			t.Fatalf("parseView(%s) = %#v, want %#v", out, back, w)
		}
	})
}
