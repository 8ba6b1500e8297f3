package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// hashVersion prefixes the hashed bytes, so a change of the canonical form
// below can never make two different requests look the same.
const hashVersion = "stepwise/create-run/v1\n"

// requestHash is the sha256 of a canonical encoding of what a create request
// asks for: agent, input messages, model, metadata, its start_at and its
// inference mode when it has them (so hashes from before them still
// match), and the tenant it is
// made for unless the default one (so hashes from before tenants still
// match); not the run_id, which is the key it is compared under. Object keys are sorted and whitespace
// dropped, so the same request sent twice, however formatted, hashes the
// same; text input hashes like the one user message it becomes.
func requestHash(tenant, agent string, input []pipeline.Message, model, metadata json.RawMessage, startAt time.Time, inference pipeline.InferenceMode) string {
	type call struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}
	type msg struct {
		Role       pipeline.Role `json:"role"`
		Content    string        `json:"content"`
		ToolCalls  []call        `json:"tool_calls"`
		ToolCallID string        `json:"tool_call_id"`
	}
	if tenant == pipeline.DefaultTenant {
		tenant = ""
	}
	canon := struct {
		Tenant    string                 `json:"tenant,omitempty"`
		Agent     string                 `json:"agent"`
		Input     []msg                  `json:"input"`
		Model     any                    `json:"model"`
		Metadata  any                    `json:"metadata"`
		StartAt   time.Time              `json:"start_at,omitzero"`
		Inference pipeline.InferenceMode `json:"inference,omitempty"`
	}{Tenant: tenant, Agent: agent, Model: canonical(model), Metadata: canonical(metadata), StartAt: startAt, Inference: inference}
	for _, m := range input {
		cm := msg{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, call{ID: tc.ID, Name: tc.Name, Arguments: canonical(tc.Arguments)})
		}
		canon.Input = append(canon.Input, cm)
	}
	b, err := json.Marshal(canon)
	if err != nil {
		// Every part was decoded from JSON a moment ago; this cannot fail.
		panic("gateway: canonical request does not encode: " + err.Error())
	}
	sum := sha256.Sum256(append([]byte(hashVersion), b...))
	return hex.EncodeToString(sum[:])
}

// canonical decodes raw into plain values that encode with sorted object
// keys; numbers keep their text. Absent and null both give nil.
func canonical(raw json.RawMessage) any {
	if isNull(raw) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	return v
}
