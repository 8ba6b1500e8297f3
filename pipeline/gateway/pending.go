package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// MaxPendingLimit is the most entries GET /v1/pending serves at once: the
// store's cap. Without a limit the store's default applies
// (store.DefaultPendingLimit).
const MaxPendingLimit = store.MaxPendingLimit

// PendingList is the answer of GET /v1/pending: suspended calls awaiting a
// decision, oldest parked first.
type PendingList struct {
	Pending []PendingView `json:"pending"`
}

// PendingView is one suspended call of PendingList, with what a decision
// for it needs: run_id and call_id to address it, args_hash to quote, and
// resume_mode to know what a resume's payload becomes. Deadline is absent
// when the approval never times out; OnTimeout is what happens when it
// does (resume or cancel).
type PendingView struct {
	RunID      string              `json:"run_id"`
	Agent      string              `json:"agent"`
	CallID     string              `json:"call_id"`
	Step       int                 `json:"step"`
	Tool       string              `json:"tool"`
	Arguments  json.RawMessage     `json:"arguments"`
	Ticket     string              `json:"ticket"`
	Reason     string              `json:"reason"`
	ArgsHash   string              `json:"args_hash"`
	ResumeMode pipeline.ResumeMode `json:"resume_mode"`
	Deadline   time.Time           `json:"deadline,omitzero"`
	OnTimeout  string              `json:"on_timeout,omitempty"`
	ParkedAt   time.Time           `json:"parked_at"`
}

func pendingViewOf(p store.PendingCall) PendingView {
	c := p.Call
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	var park ParkingView
	if c.Parking != nil {
		park = parkingViewOf(*c.Parking)
	} else {
		park.ResumeMode = pipeline.ResumeReplay
	}
	return PendingView{
		RunID: c.RunID, Agent: p.Agent, CallID: c.ID, Step: c.Step, Tool: c.Tool, Arguments: args,
		Ticket: park.Ticket, Reason: park.Reason, ArgsHash: park.ArgsHash, ResumeMode: park.ResumeMode,
		Deadline: park.Deadline, OnTimeout: park.OnTimeout, ParkedAt: park.ParkedAt,
	}
}

// listPending serves GET /v1/pending?agent=&tool=&run_id=&limit=: the
// suspended calls awaiting a decision, oldest parked first, filtered by
// agent, tool and run (empty matches all), at most limit of them (the
// store's default when absent, at most MaxPendingLimit). Calls of runs that
// are done are never pending; an unknown run_id lists nothing.
func (s *Server) listPending(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.PendingFilter{Agent: q.Get("agent"), Tool: q.Get("tool"), RunID: q.Get("run_id"), Tenant: tenantFilter(r)}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPendingLimit {
			writeError(w, invalidAll("invalid query", []string{
				fmt.Sprintf("limit %q is not a whole number from 1 to %d", v, MaxPendingLimit),
			}))
			return
		}
		f.Limit = n
	}
	calls, err := s.cfg.Store.ListPending(r.Context(), f)
	if err != nil {
		s.fail(w, r, "list pending calls", err)
		return
	}
	out := PendingList{Pending: make([]PendingView, 0, len(calls))}
	for _, c := range calls {
		out.Pending = append(out.Pending, pendingViewOf(c))
	}
	writeJSON(w, http.StatusOK, out)
}
