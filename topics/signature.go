package topics

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Why a signature check fails.
var (
	ErrUnsigned        = errors.New("the message carries no producer or no signature")
	ErrUnknownProducer = errors.New("the message's producer has no key here")
	ErrBadSignature    = errors.New("the signature does not match the message")
)

// SigningBytes is what a signature covers: the message's JSON
// without its "signature" and "v" fields, object keys sorted at every
// level, no insignificant white space, numbers as written and no HTML
// escaping — what `jq -cS 'del(.signature, .v)'` prints for it.
func SigningBytes(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	delete(m, "signature")
	delete(m, "v")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Sign returns m (a Decision or a RunRequested) signed as producer with
// key: Producer set, and Signature the hex HMAC-SHA256 of the SigningBytes
// of its encoding.
func Sign[M Message, P interface {
	*M
	sign(producer, signature string)
}](m M, producer string, key []byte) (M, error) {
	P(&m).sign(producer, "")
	raw, err := Encode(m)
	if err != nil {
		return m, err
	}
	b, err := SigningBytes(raw)
	if err != nil {
		return m, err
	}
	P(&m).sign(producer, mac(b, key))
	return m, nil
}

// VerifySignature checks the signature of a signed message (a decision or
// a run request) as it came (raw)
// against the keys of its producer (a producer may have two while its key
// is rotated). It returns nil, or why it fails: ErrUnsigned,
// ErrUnknownProducer or ErrBadSignature.
func VerifySignature(raw []byte, keys map[string][][]byte) error {
	var head struct {
		Producer  string `json:"producer"`
		Signature string `json:"signature"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if head.Producer == "" || head.Signature == "" {
		return ErrUnsigned
	}
	ks, ok := keys[head.Producer]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownProducer, head.Producer)
	}
	b, err := SigningBytes(raw)
	if err != nil {
		return err
	}
	got, err := hex.DecodeString(head.Signature)
	if err != nil {
		return ErrBadSignature
	}
	for _, k := range ks {
		want, _ := hex.DecodeString(mac(b, k))
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrBadSignature
}

func mac(b, key []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}
