package schema

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeArgs reads what jsonschema's own reader reads, to the same values
// (numbers as json.Number, as written), and refuses what it refuses.
func TestDecodeArgs_reads_as_jsonschema_does(t *testing.T) {
	for _, in := range []string{
		`{"n":0}`, ` {"a":[1,2.50,-3e10,12345678901234567890123],"b":{"c":null,"d":true}} `,
		`{"s":"\u00e9\ud83d\ude00 \"q\" \\ \n"}`, "{\"bad\":\"\xff\xfe\"}", `{"a":1,"a":2}`, `[]`, `"x"`, `7`,
		`{}`, `{"n":0} {"m":1}`, `{"n":0}]`, `{"n":}`, `{"n":01}`, `{"n":0`, `nul`, ``, `{"n":1.}`, `{"n":.5}`,
	} {
		want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(in)))
		got, err := decodeArgs([]byte(in))
		if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeArgs(%q) = %#v, %v; jsonschema reads %#v, %v", in, got, err, want, wantErr)
		}
		if wantErr != nil && err.Error() != wantErr.Error() {
			t.Errorf("decodeArgs(%q) error %q, jsonschema's %q", in, err, wantErr)
		}
	}
}
