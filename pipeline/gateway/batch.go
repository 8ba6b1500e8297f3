package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// BatchResponse is the answer of POST /v1/runs/batch: the batch's id
// (GET /v1/batches/{id} follows it) and the run ids in the order of the
// items.
type BatchResponse struct {
	BatchID string   `json:"batch_id"`
	RunIDs  []string `json:"run_ids"`
}

// batchItem is one item of a batch body, before validation.
type batchItem struct {
	raw   []byte
	label string // "item 3" or "item 3 (line 5)"
}

// createBatch serves POST /v1/runs/batch. Every item is validated before
// anything is written; one invalid item refuses the whole batch. Then the
// runs are created and published concurrently, at most BatchConcurrency at a
// time, and the batch is recorded with those of its runs the tenant owns
// (recordBatch). A run that fails after validation does not stop the
// others; the answer then names the failed items and carries every run id,
// so the same batch can be sent again safely, and the batch id only when
// the batch has a record.
func (s *Server) createBatch(w http.ResponseWriter, r *http.Request) {
	mt, ae := mediaType(r, mediaJSON, mediaNDJSON, mediaJSONL, mediaJSONL2)
	if ae != nil {
		writeError(w, ae)
		return
	}
	body, ae := readBody(w, r, s.cfg.MaxBodyBytes)
	if ae != nil {
		writeError(w, ae)
		return
	}
	items, ae := s.splitBatch(body, mt)
	if ae != nil {
		writeError(w, ae)
		return
	}
	budget, ae := batchBudget(r)
	if ae != nil {
		writeError(w, ae)
		return
	}
	mode, err := pipeline.ParseInferenceMode(r.URL.Query().Get("inference"))
	if err != nil {
		writeError(w, invalid("%v", err))
		return
	}

	runs := make([]newRun, len(items))
	var details []string
	bad := 0
	seen := make(map[string]int, len(items))
	for i, it := range items {
		nr, problems := s.parseCreate(it.raw, true)
		if len(problems) == 0 && nr.run.Inference == "" && mode != "" {
			nr.run.Inference, problems = s.inferenceMode(nr.run.Agent, string(mode)) // the batch's mode, for an item naming none
		}
		nr = nr.ownedBy(principalOf(r).Tenant)
		if id := nr.run.ID; id != "" {
			if j, dup := seen[id]; dup {
				problems = append(problems, fmt.Sprintf("run_id %q repeats item %d's", id, j))
			} else {
				seen[id] = i
			}
		}
		if len(problems) > 0 {
			bad++
		}
		for _, p := range problems {
			details = append(details, it.label+": "+p)
		}
		runs[i] = nr
	}
	if bad > 0 {
		writeError(w, invalidAll(fmt.Sprintf("%d of %d items are invalid, no run was created", bad, len(items)), details))
		return
	}

	ids := make([]string, len(runs))
	for i := range runs {
		if runs[i].run.ID == "" {
			runs[i].run.ID = uuid.NewString()
		}
		ids[i] = runs[i].run.ID
	}
	// The budget goes before the runs, which spend it from their first
	// step; the batch's record after them, with the runs the tenant owns.
	tenant := principalOf(r).Tenant
	batch := batchID(tenant, ids)
	for i := range runs {
		runs[i].run.Batch, runs[i].run.BatchBudget = batch, budget != (store.Amounts{})
	}
	if budget != (store.Amounts{}) {
		if err := s.cfg.Store.SetBatchBudget(r.Context(), batch, budget); err != nil {
			writeError(w, s.classify(r, "save the budget of batch "+batch, err))
			return
		}
	}
	errs := make([]error, len(runs))
	sem := make(chan struct{}, s.cfg.BatchConcurrency)
	var wg sync.WaitGroup
	for i := range runs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), createTimeout)
			defer cancel()
			_, _, errs[i] = s.start(ctx, runs[i])
		})
	}
	wg.Wait()

	recorded, err := s.recordBatch(r, batch, tenant, ids, errs)
	if err != nil {
		ae := *s.classify(r, "record batch "+batch, err)
		ae.body.Error.Message += "; its runs may be created: sending the same batch again is safe"
		ae.body.RunIDs = ids
		writeError(w, &ae)
		return
	}
	var failed *apiError
	details = nil
	for i, err := range errs {
		if err == nil {
			continue
		}
		ae := s.refusal(r.Context(), ids[i], err)
		if failed == nil || ae.status > failed.status {
			failed = ae
		}
		details = append(details, fmt.Sprintf("%s (run_id %s): %s", items[i].label, ids[i], ae.body.Error.Message))
	}
	if failed != nil {
		out := apiErr(failed.status, failed.body.Error.Code,
			fmt.Sprintf("%d of %d runs failed, the others are created and queued; sending the same batch with these run_ids again is safe: %s",
				len(details), len(items), summarize(details)))
		out.body.Error.Details = details
		out.body.RunIDs = ids
		if recorded {
			out.body.BatchID = batch
		}
		writeError(w, out)
		return
	}
	writeJSON(w, http.StatusCreated, BatchResponse{BatchID: batch, RunIDs: ids})
}

// batchBudget reads ?token_budget=N (the tokens the batch's runs may use
// together) and ?cost_budget=USD (what they may cost, at the prices of
// budgets.prices); the zero Amounts when neither is given.
func batchBudget(r *http.Request) (store.Amounts, *apiError) {
	var b store.Amounts
	q := r.URL.Query()
	if v := q.Get("token_budget"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return b, invalid("token_budget %q: want a positive number of tokens", v)
		}
		b.Tokens = n
	}
	if v := q.Get("cost_budget"); v != "" {
		usd, err := strconv.ParseFloat(v, 64)
		if err != nil || !(usd > 0) || math.IsInf(usd, 0) || pipeline.MicroUSD(usd) <= 0 {
			return b, invalid("cost_budget %q: want a positive amount of USD, at least 0.000001", v)
		}
		b.Cost = pipeline.MicroUSD(usd)
	}
	return b, nil
}

// splitBatch cuts a batch body into items: a JSON array when its first
// non-space byte is '[', JSON Lines otherwise (one object per line, blank
// lines skipped).
func (s *Server) splitBatch(body []byte, mt string) ([]batchItem, *apiError) {
	switch firstByte(body) {
	case 0:
		return nil, invalid("the batch is empty, want a JSON array or JSON Lines of runs")
	case '[':
		return s.splitArray(body)
	case '{':
		return s.splitLines(body)
	default:
		if mt == mediaNDJSON || mt == mediaJSONL || mt == mediaJSONL2 {
			return s.splitLines(body)
		}
		return nil, invalid("the body is %s, want a JSON array or JSON Lines of runs", jsonKind(body))
	}
}

func (s *Server) splitArray(body []byte) ([]batchItem, *apiError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // '['
		return nil, malformedBatch(body, err)
	}
	var items []batchItem
	for dec.More() {
		if len(items) == s.cfg.MaxBatchItems {
			return nil, tooManyItems(s.cfg.MaxBatchItems)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, malformedBatch(body, err)
		}
		items = append(items, batchItem{raw: raw, label: fmt.Sprintf("item %d", len(items))})
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, malformedBatch(body, err)
	}
	if off, trailing := trailingData(body, dec.InputOffset()); trailing {
		return nil, invalid("unexpected data after the array%s", position(body, off+1))
	}
	if len(items) == 0 {
		return nil, invalid("the batch is an empty array, want at least one run")
	}
	return items, nil
}

// malformedBatch describes why the batch body does not parse. A streaming
// decoder's offsets are not those of the body, so the body is parsed whole
// once more for an exact position.
func malformedBatch(body []byte, err error) *apiError {
	if uerr := json.Unmarshal(body, new(any)); uerr != nil {
		err = uerr
	}
	return invalid("%s", jsonProblem(err, body))
}

func (s *Server) splitLines(body []byte) ([]batchItem, *apiError) {
	var items []batchItem
	for n, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if len(items) == s.cfg.MaxBatchItems {
			return nil, tooManyItems(s.cfg.MaxBatchItems)
		}
		items = append(items, batchItem{raw: line, label: fmt.Sprintf("item %d (line %d)", len(items), n+1)})
	}
	if len(items) == 0 {
		return nil, invalid("the batch is empty, want a JSON array or JSON Lines of runs")
	}
	return items, nil
}

func tooManyItems(max int) *apiError {
	return apiErr(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
		fmt.Sprintf("the batch has more than %d items; split it", max))
}

// recordBatch records batch with the runs whose create succeeded: created
// now, or created before by the same request of the same tenant (a
// replay). A run whose create failed (another tenant's id, a conflict, a
// store error) is left out, so a batch never names a run it did not
// create for its tenant; sending the batch again records the runs it then
// creates. With none of them, nothing is recorded and recorded is false.
func (s *Server) recordBatch(r *http.Request, batch, tenant string, ids []string, errs []error) (recorded bool, err error) {
	var created []string
	for i, id := range ids {
		if errs[i] == nil {
			created = append(created, id)
		}
	}
	if len(created) == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), createTimeout)
	defer cancel()
	return true, s.cfg.Store.SaveBatch(ctx, batch, store.Batch{Tenant: tenant, RunIDs: created})
}
