package pipeline

import "encoding/json"

// GateAction is what ToolGate decided for a call.
type GateAction string

// The four gate actions. Block, Suspend and SetResult intercept a call;
// Allow lets it execute.
const (
	GateAllow     GateAction = "allow"      // publish the call to its queue
	GateBlock     GateAction = "block"      // fail the call and end the run blocked
	GateSuspend   GateAction = "suspend"    // park the call until a decision arrives
	GateSetResult GateAction = "set_result" // finish the call with a given result
)

// gatePriority orders intercepts: Block > Suspend > SetResult > Allow.
var gatePriority = map[GateAction]int{GateAllow: 0, GateSetResult: 1, GateSuspend: 2, GateBlock: 3}

// Intercept is one voice at ToolGate: an action and what goes with it.
type Intercept struct {
	Action GateAction      `json:"action"`
	Reason string          `json:"reason,omitempty"` // why: shown to people and, for block, to the model
	Result json.RawMessage `json:"result,omitempty"` // set_result: the call's result
	Error  string          `json:"error,omitempty"`  // set_result: the call fails with this instead
}

// CombineIntercepts returns the intercept that wins by the seeds' priority
// rule, Block > Suspend > SetResult; among equals the first one given wins.
// With none, or only allows, the call is allowed.
func CombineIntercepts(intercepts ...Intercept) Intercept {
	win := Intercept{Action: GateAllow}
	for _, i := range intercepts {
		if gatePriority[i.Action] > gatePriority[win.Action] {
			win = i
		}
	}
	return win
}

// ResumeMode says how a resumed call uses its decision.
type ResumeMode string

// The three resume modes.
const (
	ResumeReplay              ResumeMode = "replay"                 // execute again with the original arguments
	ResumeUseDecisionAsResult ResumeMode = "use_decision_as_result" // the decision's payload is the call's result
	ResumePassDecisionToTool  ResumeMode = "pass_decision_to_tool"  // execute with the payload as arguments
)

// ParseResumeMode returns the mode named s; "" is replay.
func ParseResumeMode(s string) (ResumeMode, error) {
	switch m := ResumeMode(s); m {
	case "":
		return ResumeReplay, nil
	case ResumeReplay, ResumeUseDecisionAsResult, ResumePassDecisionToTool:
		return m, nil
	}
	return "", &unknownError{what: "resume mode", value: s}
}

type unknownError struct{ what, value string }

func (e *unknownError) Error() string {
	return e.what + " " + quote(e.value) + ": " + ErrUnknownStatus.Error()
}
func (e *unknownError) Unwrap() error { return ErrUnknownStatus }

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
