package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
)

const authConfig = approvalsConfig + `auth:
  keys:
    - {name: shop-backend, key_env: STEPWISE_TEST_SHOP_KEY, scopes: [runs:write, runs:read], tenant: shop}
    - {name: shop-approver, key_env: STEPWISE_TEST_APPROVER_KEY, scopes: [decisions:write, runs:read], tenant: shop}
    - {name: bank, key_sha256: "%x", scopes: [runs:write, runs:read, decisions:write], tenant: bank}
`

// keyDo is httpDo with an API key.
func keyDo(t *testing.T, key, method, url string, body, into any) int {
	t.Helper()
	var r *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	} else {
		r = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if into != nil {
		_ = json.NewDecoder(res.Body).Decode(into)
	}
	return res.StatusCode
}

// Keys from the environment and from a digest, through the whole pipeline:
// a tenant's backend creates a run, its approver decides the parked call
// and is recorded as the decider, another tenant cannot see or decide it.
func TestAuth_tenants_and_deciders_through_the_pipeline(t *testing.T) {
	t.Setenv("STEPWISE_TEST_SHOP_KEY", "shop-key-0001")
	t.Setenv("STEPWISE_TEST_APPROVER_KEY", "approver-key-0001")
	const bankKey = "bank-key-0001" // configured by its digest
	stack := connect(t, newInfra(t), parseConfig(t, fmt.Sprintf(authConfig, sha256.Sum256([]byte(bankKey)))))
	workers(t, stack)
	base := serve(t, stack)

	body := map[string]any{"run_id": "shop-1", "agent": "approvals", "input": "go", "model": json.RawMessage(script(call("R", "tool_a", `{"x":1}`)))}
	if code := keyDo(t, "", http.MethodPost, base+"/v1/runs", body, nil); code != http.StatusUnauthorized {
		t.Fatalf("create without a key: %d", code)
	}
	if code := keyDo(t, "shop-key-0001", http.MethodPost, base+"/v1/runs", body, nil); code != http.StatusCreated {
		t.Fatalf("create as shop-backend: %d", code)
	}
	var v runView
	testinfra.Eventually(t, 30*time.Second, func() bool {
		keyDo(t, "shop-key-0001", http.MethodGet, base+"/v1/runs/shop-1", nil, &v)
		return v.Status == pipeline.RunWaiting
	}, func() string { return "shop-1 is " + string(v.Status) })

	decision := map[string]any{"decision_id": "d-1", "call_id": "R", "action": "resume", "decided_by": "alice"}
	if code := keyDo(t, bankKey, http.MethodGet, base+"/v1/runs/shop-1", nil, nil); code != http.StatusNotFound {
		t.Errorf("bank reads shop-1: %d, want 404", code)
	}
	if code := keyDo(t, bankKey, http.MethodPost, base+"/v1/runs/shop-1/decisions", decision, nil); code != http.StatusNotFound {
		t.Errorf("bank decides shop-1: %d, want 404", code)
	}
	var pending struct {
		Pending []struct{ RunID string } `json:"pending"`
	}
	if keyDo(t, bankKey, http.MethodGet, base+"/v1/pending", nil, &pending); len(pending.Pending) != 0 {
		t.Errorf("bank sees shop's pending calls: %+v", pending)
	}
	if keyDo(t, "approver-key-0001", http.MethodGet, base+"/v1/pending", nil, &pending); len(pending.Pending) != 1 {
		t.Errorf("shop-approver sees %+v, want shop-1's call", pending)
	}
	// shop's lists walk shop's own indexes (ADR 0034); the decision below
	// takes the call out of its pending index.
	index := func(key string) []string {
		ids, err := stack.Redis.ZRange(context.Background(), key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if ids := index("sw:pending:t:shop"); len(ids) != 1 || ids[0] != "{shop-1}R" {
		t.Errorf("shop's pending index = %v", ids)
	}
	if ids := index("sw:runs:t:shop"); len(ids) != 1 || ids[0] != "shop-1" {
		t.Errorf("shop's run index = %v", ids)
	}
	var runs struct {
		Runs []struct {
			RunID string `json:"run_id"`
		} `json:"runs"`
	}
	if keyDo(t, "shop-key-0001", http.MethodGet, base+"/v1/runs", nil, &runs); len(runs.Runs) != 1 || runs.Runs[0].RunID != "shop-1" {
		t.Errorf("shop lists %+v, want shop-1", runs)
	}
	if keyDo(t, bankKey, http.MethodGet, base+"/v1/runs", nil, &runs); len(runs.Runs) != 0 {
		t.Errorf("bank lists %+v, want none", runs)
	}
	if code := keyDo(t, "shop-key-0001", http.MethodPost, base+"/v1/runs/shop-1/decisions", decision, nil); code != http.StatusForbidden {
		t.Errorf("shop-backend decides: %d, want 403", code)
	}
	if code := keyDo(t, "approver-key-0001", http.MethodPost, base+"/v1/runs/shop-1/decisions", decision, nil); code != http.StatusAccepted {
		t.Fatalf("shop-approver decides: %d", code)
	}
	testinfra.Eventually(t, 30*time.Second, func() bool {
		keyDo(t, "approver-key-0001", http.MethodGet, base+"/v1/runs/shop-1", nil, &v)
		return v.Status == pipeline.RunDone
	}, func() string { return "shop-1 is " + string(v.Status) })
	if ids := index("sw:pending:t:shop"); len(ids) != 0 {
		t.Errorf("shop's pending index after the decision = %v", ids)
	}
	// Retired with its tenant, for the trim to tell shop's index alone
	// (ADR 0035).
	testinfra.Eventually(t, 30*time.Second, func() bool {
		return slices.Contains(index("sw:retired:owned"), "shop-1{shop")
	}, func() string { return fmt.Sprintf("the retired index holds %v", index("sw:retired:owned")) })
	var full struct {
		ToolCalls []struct {
			Decision struct {
				DecidedBy string `json:"decided_by"`
			} `json:"decision"`
		} `json:"tool_calls"`
	}
	keyDo(t, "shop-key-0001", http.MethodGet, base+"/v1/runs/shop-1", nil, &full)
	if len(full.ToolCalls) != 1 || full.ToolCalls[0].Decision.DecidedBy != "shop-approver (alice)" {
		t.Fatalf("decided_by %+v, want shop-approver (alice)", full.ToolCalls)
	}
}
