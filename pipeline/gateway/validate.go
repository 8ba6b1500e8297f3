package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
)

// MaxRunIDLength is the longest run_id a client may choose.
const MaxRunIDLength = 128

// runIDPattern is what a client-chosen run_id may hold. Braces would break
// the Redis hash tag {run_id}; spaces and slashes would break URLs and keys.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// idProblem says what is wrong with id, a client-chosen name that run ids
// are made of (field names it in the answer, max is its longest), or ""
// when nothing is.
func idProblem(field, id string, max int) string {
	switch {
	case len(id) > max:
		return fmt.Sprintf("%s is %d characters long, at most %d allowed", field, len(id), max)
	case !runIDPattern.MatchString(id):
		return fmt.Sprintf("%s %q holds characters outside [A-Za-z0-9._:-]", field, id)
	case id == "." || id == "..":
		return fmt.Sprintf("%s %q cannot be addressed in a URL path", field, id)
	}
	return ""
}

// CreateRunRequest is the body of POST /v1/runs and one item of
// POST /v1/runs/batch. Input is a JSON string (one user message) or an array
// of messages; Model is a run's own script model; Metadata is any JSON
// object, returned as given. StartAt (RFC 3339) delays the run's first
// step: the run is created at once and stays created until then.
type CreateRunRequest struct {
	RunID    string          `json:"run_id,omitempty"`
	Agent    string          `json:"agent"`
	Input    json.RawMessage `json:"input"`
	Model    json.RawMessage `json:"model,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	StartAt  string          `json:"start_at,omitempty"`
}

var createFields = []string{"run_id", "agent", "input", "model", "metadata", "start_at", "inference"}

// newRun is a validated create request: the run to write and its input.
type newRun struct {
	run   pipeline.Run
	input []pipeline.Message
}

// parseCreate decodes and validates one create request (a whole body, or
// an item of a batch) and returns every problem it finds, not just the
// first. The run it returns has no id when the client chose none, and no
// timestamps.
func (s *Server) parseCreate(body []byte, item bool) (newRun, []string) {
	what, hint := "the body", " (send arrays to POST /v1/runs/batch)"
	if item {
		what, hint = "the item", ""
	}
	var fields map[string]json.RawMessage
	switch firstByte(body) {
	case 0:
		return newRun{}, []string{what + " is empty, want a JSON object"}
	case '{':
		if err := decodeStrict(body, &fields, false); err != nil {
			return newRun{}, []string{err.Error()}
		}
	case '[':
		return newRun{}, []string{what + " is an array, want a JSON object" + hint}
	default:
		if !json.Valid(body) {
			return newRun{}, []string{decodeStrict(body, new(any), false).Error()}
		}
		return newRun{}, []string{fmt.Sprintf("%s is %s, want a JSON object", what, jsonKind(body))}
	}

	var problems []string
	var unknown []string
	for k := range fields {
		if !slices.Contains(createFields, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		problems = append(problems, fmt.Sprintf("unknown field %q (known: %s)", k, strings.Join(createFields, ", ")))
	}

	var nr newRun
	runID, p := stringField(fields, "run_id")
	problems = append(problems, p...)
	if runID != "" {
		if p := idProblem("run_id", runID, MaxRunIDLength); p != "" {
			problems = append(problems, p)
		}
	}
	nr.run.ID = runID

	agent, p := stringField(fields, "agent")
	problems = append(problems, p...)
	if len(p) == 0 {
		switch {
		case agent == "":
			problems = append(problems, "agent is missing")
		case !s.cfg.Agents(agent):
			problems = append(problems, fmt.Sprintf("agent %q is not configured", agent))
		}
	}
	nr.run.Agent = agent

	nr.input, p = parseInput(fields["input"])
	problems = append(problems, p...)

	if raw := fields["model"]; !isNull(raw) {
		if firstByte(raw) != '{' {
			problems = append(problems, fmt.Sprintf("model is %s, want an object", jsonKind(raw)))
		} else if s.cfg.ValidateModel != nil {
			if err := s.cfg.ValidateModel(raw); err != nil {
				problems = append(problems, fmt.Sprintf("model: %v", err))
			}
		}
		nr.run.Model = compact(raw)
	}

	if raw := fields["metadata"]; !isNull(raw) {
		if firstByte(raw) != '{' {
			problems = append(problems, fmt.Sprintf("metadata is %s, want an object", jsonKind(raw)))
		}
		nr.run.Metadata = compact(raw)
	}

	startAt, p := stringField(fields, "start_at")
	problems = append(problems, p...)
	if startAt != "" {
		at, err := time.Parse(time.RFC3339, startAt)
		if err != nil {
			problems = append(problems, fmt.Sprintf("start_at %q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)", startAt))
		}
		nr.run.StartAt = at.UTC()
	}

	mode, p := stringField(fields, "inference")
	problems = append(problems, p...)
	nr.run.Inference, p = s.inferenceMode(agent, mode)
	problems = append(problems, p...)

	if len(problems) > 0 {
		return newRun{}, problems
	}
	return nr.ownedBy(pipeline.DefaultTenant), nil
}

// inferenceMode is the inference mode named (ADR 0072), or the problem
// with it: an unknown mode, or batch for an agent whose model has no batch
// mode.
func (s *Server) inferenceMode(agent, named string) (pipeline.InferenceMode, []string) {
	mode, err := pipeline.ParseInferenceMode(named)
	switch {
	case err != nil:
		return "", []string{err.Error()}
	case mode == pipeline.InferenceBatch && agent != "" && !s.batchAgent(agent):
		return "", []string{fmt.Sprintf("inference %q: agent %q's model has no batch mode (configure model.batch to run it through the Batch API)", mode, agent)}
	}
	return mode, nil
}

// batchAgent reports whether agent's model has a batch mode.
func (s *Server) batchAgent(agent string) bool { return slices.Contains(s.cfg.BatchAgents, agent) }

// ownedBy returns nr made for tenant: the run's tenant, and its request
// hash, so the same request from another tenant is another request.
func (nr newRun) ownedBy(tenant string) newRun {
	nr.run.Tenant = tenant
	nr.run.RequestHash = requestHash(tenant, nr.run.Agent, nr.input, nr.run.Model, nr.run.Metadata, nr.run.StartAt, nr.run.Inference)
	return nr
}

// stringField returns fields[name] as a string; absent and null read as "".
func stringField(fields map[string]json.RawMessage, name string) (string, []string) {
	raw := fields[name]
	if isNull(raw) {
		return "", nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", []string{fmt.Sprintf("%s is %s, want a string", name, jsonKind(raw))}
	}
	return v, nil
}

// parseInput reads input: text becomes one user message; an array is the
// messages, each checked.
func parseInput(raw json.RawMessage) ([]pipeline.Message, []string) {
	switch firstByte(raw) {
	case 0, 'n':
		return nil, []string{`input is missing: give text or an array of messages`}
	case '"':
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, []string{"input: " + jsonProblem(err, nil)}
		}
		if text == "" {
			return nil, []string{"input is empty text"}
		}
		return []pipeline.Message{{Role: pipeline.RoleUser, Content: text}}, nil
	case '[':
	default:
		return nil, []string{fmt.Sprintf("input is %s, want text or an array of messages", jsonKind(raw))}
	}

	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, []string{"input: " + jsonProblem(err, nil)}
	}
	if len(items) == 0 {
		return nil, []string{"input is an empty array, want at least one message"}
	}
	var problems []string
	msgs := make([]pipeline.Message, 0, len(items))
	proposed := map[string]bool{} // tool call ids of earlier assistant messages
	for i, item := range items {
		var m pipeline.Message
		if firstByte(item) != '{' {
			problems = append(problems, fmt.Sprintf("input[%d] is %s, want a message object", i, jsonKind(item)))
			continue
		}
		if err := decodeStrict(item, &m, true); err != nil {
			problems = append(problems, fmt.Sprintf("input[%d]: %v", i, err))
			continue
		}
		problems = append(problems, checkMessage(i, &m, proposed)...)
		msgs = append(msgs, m)
	}
	return msgs, problems
}

// checkMessage validates message i of the input and compacts its tool call
// arguments. proposed collects the tool call ids assistant messages made, so
// a tool message can be checked to answer one of them.
func checkMessage(i int, m *pipeline.Message, proposed map[string]bool) []string {
	var problems []string
	at := fmt.Sprintf("input[%d]", i)
	switch m.Role {
	case pipeline.RoleSystem, pipeline.RoleUser, pipeline.RoleAssistant, pipeline.RoleTool:
	case "":
		problems = append(problems, at+": role is missing")
	default:
		problems = append(problems, fmt.Sprintf("%s: role %q is not one of system, user, assistant, tool", at, m.Role))
	}
	if len(m.ToolCalls) > 0 && m.Role != pipeline.RoleAssistant {
		problems = append(problems, fmt.Sprintf("%s: tool_calls are only allowed on assistant messages, not %s", at, m.Role))
	}
	for j, tc := range m.ToolCalls {
		if tc.ID == "" {
			problems = append(problems, fmt.Sprintf("%s.tool_calls[%d]: id is missing", at, j))
		}
		if tc.Name == "" {
			problems = append(problems, fmt.Sprintf("%s.tool_calls[%d]: name is missing", at, j))
		}
		m.ToolCalls[j].Arguments = compact(tc.Arguments)
		proposed[tc.ID] = true
	}
	switch {
	case m.Role == pipeline.RoleTool && m.ToolCallID == "":
		problems = append(problems, at+": a tool message needs tool_call_id")
	case m.Role == pipeline.RoleTool && !proposed[m.ToolCallID]:
		problems = append(problems, fmt.Sprintf("%s: tool_call_id %q answers no tool call of an earlier assistant message", at, m.ToolCallID))
	case m.Role != pipeline.RoleTool && m.ToolCallID != "":
		problems = append(problems, fmt.Sprintf("%s: tool_call_id is only allowed on tool messages", at))
	}
	if m.Content == "" && len(m.ToolCalls) == 0 && m.Role != pipeline.RoleTool {
		problems = append(problems, at+": content is empty")
	}
	return problems
}

// compact returns raw without insignificant whitespace (raw itself when it
// does not parse; callers have checked it does).
func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
