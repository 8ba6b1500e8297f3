package pipeline

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// ArgsHash is the hash a decision quotes to prove it approves these exact
// arguments: the hex SHA-256 of their canonical JSON (object keys sorted, no
// insignificant space, numbers as written). Empty arguments hash as {}.
func ArgsHash(args json.RawMessage) (string, error) {
	canon, err := CanonicalJSON(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// CanonicalJSON re-encodes raw with object keys sorted and no insignificant
// space. Numbers keep their written form, so 1.0 and 1 differ.
func CanonicalJSON(raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("canonical JSON: data after the value")
	}
	return json.Marshal(v) // encoding/json sorts map keys
}
