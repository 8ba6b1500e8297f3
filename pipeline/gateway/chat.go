package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/topics"
)

// Chat frontends (the AI SDK's useChat, AG-UI clients) speak of threads:
// a conversation that grows a user message at a time. Stepwise keeps a
// thread as a chain of runs, one per turn (store.ThreadRunID); a client
// request comes down to a chatTurn, whatever its protocol. ADR 0014.

// maxThreadIDLength leaves room in a run id for the turn ("~" and digits).
const maxThreadIDLength = MaxRunIDLength - 8

// chatTurn is what a chat request asks of a thread.
type chatTurn struct {
	thread string
	// turn is how many user messages the client's conversation holds:
	// the turn it speaks of. Clients send the whole conversation, so a
	// repeated request names the same turn and finds its run.
	turn int
	// input is the client's conversation, the input of a thread's first
	// turn; user is its last user message, the question of a later turn
	// (whose input is the previous turn's conversation, as stepwise kept
	// it, and then this).
	input []pipeline.Message
	user  string
	// answers are the client's answers to approval requests of the turn.
	answers []chatAnswer
	// agent, model and metadata are as in POST /v1/runs; a later turn
	// keeps the previous turn's unless the request names others.
	agent           string
	model, metadata json.RawMessage
}

// chatRoles are the roles of the chat protocols' messages stepwise keeps.
var chatRoles = map[string]pipeline.Role{
	"user": pipeline.RoleUser, "assistant": pipeline.RoleAssistant,
	"system": pipeline.RoleSystem, "developer": pipeline.RoleSystem,
}

// add takes the client's next message: a user message counts a turn and
// is the question; a message with text is input. It reports false for a
// role outside chatRoles.
func (t *chatTurn) add(role, text string) bool {
	r, ok := chatRoles[role]
	if !ok {
		return false
	}
	if r == pipeline.RoleUser {
		t.turn++
		t.user = text
	}
	if text != "" {
		t.input = append(t.input, pipeline.Message{Role: r, Content: text})
	}
	return true
}

// chatAnswer is an answer to one approval request, or a client's output of
// a frontend tool's call (output, chatclient.go): resume the call (with a
// payload for its resume mode) or cancel it. decisionID derives from what
// it answers, so an answer sent twice is one decision.
type chatAnswer struct {
	decisionID string
	callID     string
	output     bool
	resume     bool
	payload    json.RawMessage
	reason     string
}

// chatStream is what a chat response streams: run's events after `after`
// ("": the whole run).
type chatStream struct {
	run   pipeline.Run
	after string
}

// checkThreadID refuses a thread id that cannot name runs.
func checkThreadID(field, id string) *apiError {
	if id == "" {
		return invalid("%s is missing: it names the chat, and its first turn's run", field)
	}
	if p := idProblem(field, id, maxThreadIDLength); p != "" {
		return invalid("%s", p)
	}
	return nil
}

// chatRequest reads a chat protocol's request into v (what is its name in
// errors), turns it into a chatTurn with turn (a method of v, bound before
// the read, so with a pointer receiver: it reads v when called) and
// starts it; on any refusal it answers and returns false.
func (s *Server) chatRequest(w http.ResponseWriter, r *http.Request, what string, v any, turn func() (chatTurn, *apiError)) (chatStream, bool) {
	body, ae := jsonBody(w, r, s.cfg.MaxBodyBytes)
	if ae == nil {
		if err := json.Unmarshal(body, v); err != nil {
			ae = invalid("invalid %s: %s", what, jsonProblem(err, body))
		}
	}
	var t chatTurn
	if ae == nil {
		t, ae = turn()
	}
	if ae == nil {
		t.agent, ae = chatAgent(r, t.agent)
	}
	var cs chatStream
	if ae == nil {
		cs, ae = s.startTurn(r, t)
	}
	if ae != nil {
		writeError(w, ae)
		return chatStream{}, false
	}
	return cs, true
}

// chatAgent is the agent a chat request names: in its body (bodyAgent),
// as ?agent=NAME, or in both when they agree; "" when it names none (a
// later turn keeps the previous turn's); an empty ?agent= names none. A
// query that names two agents, or another one than the body, is refused:
// no guess at which was meant.
func chatAgent(r *http.Request, bodyAgent string) (string, *apiError) {
	names := r.URL.Query()["agent"]
	switch {
	case len(names) > 1:
		return "", invalid("the query names the agent %d times (%s): name it once", len(names), strings.Join(names, ", "))
	case len(names) == 0 || names[0] == "":
		return bodyAgent, nil
	case bodyAgent != "" && bodyAgent != names[0]:
		return "", invalid("the query names agent %q and the body agent %q: name one, or the same in both", names[0], bodyAgent)
	}
	return names[0], nil
}

// startTurn does what t asks: publishes its answers that decide something
// now (awaitedAnswers) as decisions and streams the turn's run from its
// last suspension; or, for a turn with no run yet, creates it; or, for a
// repeated request (or one that decides nothing now), streams the run
// again.
func (s *Server) startTurn(r *http.Request, t chatTurn) (chatStream, *apiError) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), createTimeout)
	defer cancel()
	if t.turn < 1 {
		return chatStream{}, invalid("the messages hold no user message: a chat starts with one")
	}
	runID := store.ThreadRunID(t.thread, t.turn)
	run, err := s.threadRun(r, ctx, runID)
	if err == nil && len(t.answers) > 0 {
		if t.answers, err = s.awaitedAnswers(ctx, runID, t.answers); err != nil {
			return chatStream{}, s.classify(r, "calls of run "+runID, err)
		}
	}
	switch {
	case err == nil && len(t.answers) > 0:
		if p := principalOf(r); !p.may(ScopeDecisionsWrite) {
			return chatStream{}, apiErr(http.StatusForbidden, CodeForbidden,
				fmt.Sprintf("API key %q lacks the scope %s that answering approvals needs", p.Name, ScopeDecisionsWrite))
		}
		after, err := s.lastSuspension(ctx, runID)
		if err != nil {
			return chatStream{}, s.classify(r, "events of run "+runID, err)
		}
		for _, a := range t.answers {
			if ae := s.publishDecision(r, answerDecision(r, runID, a), run.Trace); ae != nil {
				return chatStream{}, ae
			}
		}
		return chatStream{run: run, after: after}, nil
	case err == nil:
		// The same request again, or one whose outputs were all taken
		// before: the run again.
		return chatStream{run: run}, nil
	case errors.Is(err, errNotYours):
		return chatStream{}, s.classify(r, "chat "+t.thread, err)
	case !errors.Is(err, store.ErrNotFound):
		return chatStream{}, s.classify(r, "run "+runID, err)
	case len(t.answers) > 0:
		return chatStream{}, apiErr(http.StatusNotFound, CodeNotFound,
			fmt.Sprintf("turn %d of chat %s has no run (%s): the approvals answer nothing", t.turn, t.thread, s.gone()))
	}

	nr, ae := s.nextTurn(r, ctx, t)
	if ae != nil {
		return chatStream{}, ae
	}
	nr.run.ID = runID
	run, _, err = s.start(ctx, nr)
	if err != nil {
		if !errors.As(err, &ae) {
			ae = s.classify(r, "create run "+runID, err)
		}
		return chatStream{}, ae
	}
	if err := s.cfg.Store.SetThreadHead(ctx, t.thread, t.turn); err != nil {
		// ThreadHead probes past a stale hint; only a resume pays a read.
		s.log.WarnContext(ctx, "set the head of a thread failed", "thread", t.thread, "turn", t.turn, "err", err)
	}
	return chatStream{run: run}, nil
}

// errNotYours is a thread's run that another tenant owns: not found, as
// for any route, but not a turn to create either (its id is taken), so a
// chat request for it answers 404 and a resume 204, as for no stream.
var errNotYours = fmt.Errorf("%w: another tenant's", store.ErrNotFound)

// threadRun reads a run of a thread that r's principal may see; a run it
// may not see is errNotYours.
func (s *Server) threadRun(r *http.Request, ctx context.Context, runID string) (pipeline.Run, error) {
	run, err := s.cfg.Store.GetRun(ctx, runID)
	if err == nil && !principalOf(r).owns(run.Tenant) {
		return pipeline.Run{}, fmt.Errorf("%w: run %s", errNotYours, runID)
	}
	return run, err
}

// nextTurn validates the run of turn t.turn, to be created, as
// POST /v1/runs would: the first turn's input is the client's
// conversation; a later one's is the previous turn's, which must have
// ended, and the new user message, answered by the agent that held the
// previous turn at its end (as the OpenAI Agents SDK goes on with a
// result's last_agent) unless the request names another.
func (s *Server) nextTurn(r *http.Request, ctx context.Context, t chatTurn) (newRun, *apiError) {
	input := t.input
	if t.turn > 1 {
		prevID := store.ThreadRunID(t.thread, t.turn-1)
		prev, err := s.threadRun(r, ctx, prevID)
		if errors.Is(err, errNotYours) {
			return newRun{}, s.classify(r, "chat "+t.thread, err)
		}
		if errors.Is(err, store.ErrNotFound) {
			return newRun{}, apiErr(http.StatusConflict, CodeConflict,
				fmt.Sprintf("turn %d of chat %s is not known (%s): start a new chat", t.turn-1, t.thread, s.gone()))
		}
		if err != nil {
			return newRun{}, s.classify(r, "run "+prevID, err)
		}
		if !prev.Status.Final() {
			return newRun{}, apiErr(http.StatusConflict, CodeConflict,
				fmt.Sprintf("turn %d of chat %s (run %s) is still %s: answer its approvals or wait for it before the next message", t.turn-1, t.thread, prevID, prev.Status))
		}
		msgs, err := s.cfg.Store.Messages(ctx, prevID)
		if err != nil {
			return newRun{}, s.classify(r, "messages of run "+prevID, err)
		}
		input = append(msgs, pipeline.Message{Role: pipeline.RoleUser, Content: t.user})
		if t.agent == "" || t.agent == prev.Agent {
			// The agent that holds the chat answers it: the one the last
			// turn handed off to, unless the request names another.
			t.agent = orRaw(prev.CurrentAgent, prev.Agent)
		}
		if isNull(t.model) {
			t.model = prev.Model
		}
		if isNull(t.metadata) {
			t.metadata = prev.Metadata
		}
	}
	fields := map[string]any{"agent": t.agent, "input": input}
	if len(s.cfg.BatchAgents) > 0 {
		fields["inference"] = pipeline.InferenceLive // someone waits for the answer (ADR 0072)
	}
	if !isNull(t.model) {
		fields["model"] = t.model
	}
	if !isNull(t.metadata) {
		fields["metadata"] = t.metadata
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return newRun{}, invalid("the chat's run: %v", err)
	}
	nr, problems := s.parseCreate(body, false)
	if len(problems) > 0 {
		return newRun{}, invalidAll("invalid chat turn", problems)
	}
	return nr.ownedBy(principalOf(r).Tenant), nil
}

// orRaw is a, or b when a is empty.
func orRaw(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// lastSuspension is the id of the run's last run.finished of reason
// suspended: where the response that asked for approvals ended, and so
// where the one carrying their answers starts.
func (s *Server) lastSuspension(ctx context.Context, runID string) (string, error) {
	events, err := s.cfg.Store.Events(ctx, runID, "", 0)
	if err != nil {
		return "", err
	}
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == pipeline.EventRunFinished && termination(events[i]).Reason == pipeline.ReasonSuspended {
			return events[i].ID, nil
		}
	}
	return "", nil
}

// approvalDecisionID is the decision id of an answer to an approval
// request; outputDecisionID of a client's output of a call (a frontend
// call parks once).
func approvalDecisionID(approvalID string) string { return "approval:" + approvalID }
func outputDecisionID(callID string) string       { return "output:" + callID }

// answerDecision is the decision an answer stands for.
func answerDecision(r *http.Request, runID string, a chatAnswer) topics.Decision {
	d := topics.Decision{
		Header:     topics.Header{RunID: runID},
		DecisionID: a.decisionID,
		CallID:     a.callID,
		Action:     topics.ActionCancel,
		DecidedBy:  decidedBy(r, ""),
		Reason:     a.reason,
	}
	if a.resume {
		d.Action, d.Payload = topics.ActionResume, a.payload
	}
	return d
}

// streamTurn writes cs's run to sink until its response ends: the run
// ended, or it waits for approvals (a suspension nothing follows; one that
// later events follow is history: the run went on). An idle stream gets a
// heartbeat every Heartbeat.
func (s *Server) streamTurn(ctx context.Context, es *eventStream, cs chatStream, sink chatSink) error {
	fold := newChatFold(sink, cs.run.ID)
	send := func(events []pipeline.Event) (bool, error) {
		for i, ev := range events {
			if ev.Type == pipeline.EventRunFinished && termination(ev).Reason == pipeline.ReasonSuspended {
				if i < len(events)-1 {
					continue
				}
				more, err := s.cfg.Store.Events(ctx, cs.run.ID, ev.ID, 1)
				if err != nil {
					return false, err
				}
				if len(more) == 0 {
					return true, errors.Join(fold.finish(termination(ev)), es.flush())
				}
				continue
			}
			done, err := fold.event(ev)
			if err != nil {
				return false, err
			}
			if done {
				return true, es.flush()
			}
		}
		return false, es.flush()
	}
	idle := func() error {
		if time.Since(es.lastWrite) < s.cfg.Heartbeat {
			return nil
		}
		return es.heartbeat()
	}
	return s.tail(ctx, cs.run.ID, cs.after, cs.run.Status.Final(), send, idle)
}
