package app_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/internal/cli"
)

// searchConfig is a gateway with the keys of tenants a and b and an
// admin's, whose runs are searchable by their metadata key order.
const searchConfig = `
auth:
  keys:
    - {name: a, key_env: STEPWISE_TEST_A_KEY, scopes: [runs:write, runs:read], tenant: a}
    - {name: b, key_env: STEPWISE_TEST_B_KEY, scopes: [runs:write, runs:read], tenant: b}
    - {name: ops, key_env: STEPWISE_TEST_OPS_KEY, scopes: [admin]}
runs: {searchable_metadata: [order]}
agents:
  assistant:
    model: {provider: script, turns: [{text: "hi"}]}
`

// Among 10,000 runs, the few whose metadata carries order "needle" are
// found in one page of GET /v1/runs?meta.order=needle (and of `stepwise
// runs list --meta`): a tenant's key sees its own, the admin's all of
// them or one tenant's. No worker runs: the runs wait to be started.
func TestSearch_a_declared_metadata_value_is_found_among_ten_thousand_runs_in_one_page(t *testing.T) {
	keys := map[string]string{"a": "a-key-0001", "b": "b-key-0001", "ops": "ops-key-0001"}
	t.Setenv("STEPWISE_TEST_A_KEY", keys["a"])
	t.Setenv("STEPWISE_TEST_B_KEY", keys["b"])
	t.Setenv("STEPWISE_TEST_OPS_KEY", keys["ops"])
	stack := connect(t, newInfra(t), parseConfig(t, searchConfig))
	base := serve(t, stack)

	want := map[string][]string{}
	for tenant, n := range map[string]int{"a": 9_990, "b": 10} {
		items := make([]map[string]any, n)
		for i := range items {
			id, order := fmt.Sprintf("%s-%04d", tenant, i), fmt.Sprintf("o-%d", i)
			if i%2_000 == 7 || tenant == "b" && i%2 == 0 {
				order = "needle"
				want[tenant] = append(want[tenant], id)
			}
			items[i] = map[string]any{"run_id": id, "agent": "assistant", "input": "go", "metadata": map[string]any{"order": order}}
		}
		if code := keyDo(t, keys[tenant], http.MethodPost, base+"/v1/runs/batch", items, nil); code != http.StatusCreated {
			t.Fatalf("tenant %s's batch of %d runs: %d", tenant, n, code)
		}
	}
	want["ops"] = slices.Sorted(slices.Values(append(slices.Clone(want["a"]), want["b"]...)))

	for _, c := range []struct{ key, query, want string }{
		{"a", "meta.order=needle", "a"},
		{"b", "meta.order=needle", "b"},
		{"ops", "meta.order=needle", "ops"},
		{"ops", "meta.order=needle&tenant=b", "b"},
	} {
		var page struct {
			Runs []struct {
				RunID string `json:"run_id"`
			} `json:"runs"`
			NextCursor string `json:"next_cursor"`
		}
		if code := keyDo(t, keys[c.key], http.MethodGet, base+"/v1/runs?"+c.query, nil, &page); code != http.StatusOK {
			t.Fatalf("%s by %s: %d", c.query, c.key, code)
		}
		var got []string
		for _, r := range page.Runs {
			got = append(got, r.RunID)
		}
		slices.Sort(got)
		if !slices.Equal(got, want[c.want]) || page.NextCursor != "" {
			t.Errorf("%s by %s: %v (next cursor %q), want %v in one page", c.query, c.key, got, page.NextCursor, want[c.want])
		}
	}

	t.Setenv(cli.EnvGateway, base)
	t.Setenv(cli.EnvAPIKey, keys["ops"])
	code, stdout, errs := stepwiseCLI(t, "runs", "list", "--meta", "order=needle", "--tenant", "a")
	if code != cli.ExitOK || strings.Count(stdout, "\n") != len(want["a"])+1 || strings.Contains(stdout, "more:") {
		t.Fatalf("runs list --meta order=needle --tenant a: exit %d\n%s%s", code, stdout, errs)
	}
	for _, id := range want["a"] {
		if !strings.Contains(stdout, id+" ") {
			t.Errorf("runs list lacks %s:\n%s", id, stdout)
		}
	}
	if code, _, errs := stepwiseCLI(t, "runs", "list", "--meta", "customer=acme"); code != cli.ExitFail || !strings.Contains(errs, `"customer"`) {
		t.Errorf("runs list --meta customer=acme: exit %d, %s", code, errs)
	}
}
