package topics_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/topics"
)

func TestSignature_signed_decisions_verify_and_every_change_breaks_them(t *testing.T) {
	d := topics.Decision{Header: topics.Header{RunID: "r-1"}, DecisionID: "d-1", CallID: "c-1", Action: topics.ActionResume,
		Payload: []byte(`{"b":2,"a":1.50,"note":"<ok>"}`), DecidedBy: "erp"}
	keys := map[string][][]byte{"erp": {[]byte("new-key"), []byte("old-key")}}
	for _, key := range []string{"new-key", "old-key"} { // either key of a rotation
		signed, err := topics.Sign(d, "erp", []byte(key))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := topics.Encode(signed)
		if err := topics.VerifySignature(raw, keys); err != nil {
			t.Fatalf("signed with %s: %v", key, err)
		}
	}
	signed, _ := topics.Sign(d, "erp", []byte("new-key"))
	raw, _ := topics.Encode(signed)
	for name, c := range map[string]struct {
		raw  string
		want error
	}{
		"payload changed":  {strings.Replace(string(raw), `"b":2`, `"b":3`, 1), topics.ErrBadSignature},
		"call changed":     {strings.Replace(string(raw), `"c-1"`, `"c-2"`, 1), topics.ErrBadSignature},
		"unknown producer": {strings.Replace(string(raw), `"producer":"erp"`, `"producer":"mallory"`, 1), topics.ErrUnknownProducer},
		"unsigned":         {`{"decision_id":"d-1","run_id":"r-1","call_id":"c-1","action":"resume"}`, topics.ErrUnsigned},
		"signature junk":   {strings.Replace(string(raw), `"signature":"`, `"signature":"zz`, 1), topics.ErrBadSignature},
	} {
		if err := topics.VerifySignature([]byte(c.raw), keys); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// Key order and spacing do not matter; the v field is not signed.
	reordered := `{ "v": 1, "signature": "` + signed.Signature + `", "producer": "erp", "action": "resume", "call_id": "c-1",
		"run_id": "r-1", "decision_id": "d-1", "decided_by": "erp", "payload": {"note": "<ok>", "a": 1.50, "b": 2} }`
	if err := topics.VerifySignature([]byte(reordered), keys); err != nil {
		t.Fatalf("reordered: %v", err)
	}
}

func TestSignature_a_run_request_is_signed_as_a_decision_is(t *testing.T) {
	req := topics.RunRequested{Header: topics.Header{RunID: "r-1"}, Agent: "assistant", Input: []byte(`"hi"`), BatchID: "b-1"}
	signed, err := topics.Sign(req, "erp", []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := topics.Encode(signed)
	keys := map[string][][]byte{"erp": {[]byte("k")}}
	if err := topics.VerifySignature(raw, keys); err != nil {
		t.Fatalf("signed request: %v", err)
	}
	if err := topics.VerifySignature([]byte(strings.Replace(string(raw), `"b-1"`, `"b-2"`, 1)), keys); !errors.Is(err, topics.ErrBadSignature) {
		t.Fatalf("batch changed: %v, want ErrBadSignature", err)
	}
}

// What docs/topics.md tells producers to run gives the same signature.
func TestSignature_jq_and_openssl_sign_as_stepwise_does(t *testing.T) {
	for _, tool := range []string{"jq", "openssl", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	msg := `{"decision_id":"d-1","run_id":"r-1","call_id":"c-1","action":"resume","payload":{"amount":40,"note":"ok"},"decided_by":"erp","producer":"erp"}`
	cmd := exec.Command("sh", "-c", `printf %s "$(printf %s "$MSG" | jq -cS 'del(.signature, .v)')" | openssl dgst -sha256 -hmac "$KEY" -hex | sed 's/^.*= //'`)
	cmd.Env = append(cmd.Environ(), "MSG="+msg, "KEY=secret-1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	sig := strings.TrimSpace(string(out))
	signed := strings.TrimSuffix(msg, "}") + `,"signature":"` + sig + `"}`
	if err := topics.VerifySignature([]byte(signed), map[string][][]byte{"erp": {[]byte("secret-1")}}); err != nil {
		t.Fatalf("the shell's signature %s: %v", sig, err)
	}
}
