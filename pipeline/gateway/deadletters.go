package gateway

import (
	"context"
	"net/http"
	"time"
)

// DeadLetter is a record of the dead-letter topic as
// GET /v1/dead-letters shows it (`stepwise dlq list` shows the same).
type DeadLetter struct {
	Partition  int32     `json:"partition"`
	Offset     int64     `json:"offset"`
	Time       time.Time `json:"time"`
	Topic      string    `json:"topic"`
	Key        string    `json:"key"`
	Reason     string    `json:"reason"`
	Handler    string    `json:"handler,omitempty"`
	State      string    `json:"state"`
	RedrivenAt time.Time `json:"redriven_at,omitzero"`
}

// maxDeadLetters caps one answer of GET /v1/dead-letters: the newest.
const maxDeadLetters = 500

// DeadLetterLister reads the dead-letter topic, oldest first.
type DeadLetterLister func(ctx context.Context) ([]DeadLetter, error)

// listDeadLetters serves GET /v1/dead-letters: the newest records of the
// dead-letter topic first, at most maxDeadLetters.
func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	if s.cfg.DeadLetters == nil {
		writeError(w, apiErr(http.StatusNotFound, CodeNotFound, "this gateway does not read the dead-letter topic"))
		return
	}
	recs, err := s.cfg.DeadLetters(r.Context())
	if err != nil {
		s.fail(w, r, "the dead-letter topic", err)
		return
	}
	out := make([]DeadLetter, 0, min(len(recs), maxDeadLetters))
	for i := len(recs) - 1; i >= 0 && len(out) < maxDeadLetters; i-- {
		out = append(out, recs[i])
	}
	writeJSON(w, http.StatusOK, map[string][]DeadLetter{"dead_letters": out})
}
