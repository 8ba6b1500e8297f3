package fakebatch

import (
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// chat serves POST /v1/chat/completions, the live API beside the batch
// one: the request is answered by Answer at once, after LiveDelay, as a
// non-streamed chat completion (a model configured with stream: false).
// The custom_id Answer gets is "live".
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || !json.Valid(body) {
		apiError(w, http.StatusBadRequest, "invalid_json", "the request body is not JSON")
		return
	}
	if s.LiveDelay > 0 {
		select {
		case <-time.After(s.LiveDelay):
		case <-r.Context().Done():
			return
		}
	}
	out, le := s.Answer("live", body)
	if le != nil {
		status := le.Status
		if status == 0 {
			status = http.StatusInternalServerError
		}
		apiError(w, status, le.Code, le.Message)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
