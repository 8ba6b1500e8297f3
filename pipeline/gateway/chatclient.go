package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// A frontend tool's call is the client's to run (Config.ClientTools): it
// parks at ToolGate, the chat streams hand it to the client instead of
// asking to approve it, and the client's output of it (the AI SDK's
// addToolOutput, an AG-UI tool message) is the decision that resumes it.
// Clients send their whole conversation every time, outputs already
// taken included; such an output is a no-op (awaitedAnswers).

// outputAnswer is the client's output of call callID: resume the call
// with result as its result, or, when the client's tool failed (failure
// is its error), cancel it with the failure as the reason (a decision
// cannot fail a call). Its decision id derives from the call, so an
// output sent twice is one decision.
func outputAnswer(callID string, result json.RawMessage, failed bool, failure string) chatAnswer {
	a := chatAnswer{decisionID: outputDecisionID(callID), callID: callID, output: true}
	if failed {
		a.reason = orRaw(failure, "the client's tool failed")
	} else {
		a.resume, a.payload = true, result
	}
	return a
}

// awaitedAnswers are the answers of answers that decide something now:
// every approval answer, and the outputs of calls of run runID that are
// parked and of a tool the client runs. The output of any other call (one
// already decided, or finished, or run by stepwise, or unknown) is left
// out: the client sent it back with its history.
func (s *Server) awaitedAnswers(ctx context.Context, runID string, answers []chatAnswer) ([]chatAnswer, error) {
	var out []chatAnswer
	for _, a := range answers {
		if a.output {
			c, err := s.cfg.Store.GetCall(ctx, runID, a.callID)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if c.Status != pipeline.CallSuspended || !s.cfg.ClientTools(c.Tool) {
				continue
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// clientCalls tells, while a response streams, which of its calls the
// client runs: a call of a client tool (isClient), seen by its input.
type clientCalls struct {
	isClient func(tool string) bool
	calls    map[string]bool
}

func newClientCalls(isClient func(string) bool) clientCalls {
	return clientCalls{isClient: isClient, calls: map[string]bool{}}
}

// see notes call callID of tool and reports whether the client runs it.
func (c clientCalls) see(callID, tool string) bool {
	if c.isClient(tool) {
		c.calls[callID] = true
	}
	return c.calls[callID]
}

// has reports whether the client runs call callID, seen before.
func (c clientCalls) has(callID string) bool { return c.calls[callID] }
