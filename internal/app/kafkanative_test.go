package app_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
)

// kcatRecords reads topic from its start to its end with kcat, as "<key>
// <value>" lines.
func kcatRecords(t *testing.T, stack *app.Stack, topic string) []string {
	t.Helper()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is not installed (apt-get install -y kcat)") // kcatProduce skipped the test already outside CI
	}
	out, err := exec.Command(kcat, "-C", "-b", stack.Kafka.Brokers[0], "-t", topic, "-o", "beginning", "-e", "-q",
		"-f", `%k %s\n`).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Unknown topic") {
		t.Fatalf("kcat -C %s: %v: %s", topic, err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// kcatWait reads topic with kcat until a record of key holds every want,
// and returns its value.
func kcatWait(t *testing.T, stack *app.Stack, topic, key string, want ...string) string {
	t.Helper()
	var got []string
	var found string
	testinfra.Eventually(t, 30*time.Second, func() bool {
		got = kcatRecords(t, stack, topic)
		for _, line := range got {
			k, v, _ := strings.Cut(line, " ")
			if k == key && containsAll(v, want) {
				found = v
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("no record of %s with %q on %s in %q", key, want, topic, got) })
	return found
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// The Kafka-native loop with kcat alone, as issue 37 says a user checks
// it: a run requested on run-requests is answered created, the same
// record again duplicate, a bad one rejected with its reason; its parking
// is announced on approval-requests, a decision quoting it closes it with
// an applied outcome, and the run's result comes on run-results. Nothing
// goes through the HTTP API.
func TestKafkaNative_kcat_alone_requests_a_run_decides_its_approval_and_reads_its_result(t *testing.T) {
	stack, _ := approvalStack(t)
	id := "r-kcat-native"
	request := fmt.Sprintf(`{"v":1,"run_id":%q,"agent":"approvals","input":"refund it","model":%s}`, id, script(call("A", "tool_a", `{"n":7}`)))
	kcatProduce(t, stack, stack.Names.RunRequests(), id, request)
	kcatWait(t, stack, stack.Names.RunRequestOutcomes(), id, `"outcome":"created"`)
	kcatProduce(t, stack, stack.Names.RunRequests(), id, request)
	kcatWait(t, stack, stack.Names.RunRequestOutcomes(), id, `"outcome":"duplicate"`)
	kcatProduce(t, stack, stack.Names.RunRequests(), "r-kcat-bad", `{"v":1,"run_id":"r-kcat-bad","agent":"nobody","input":"x"}`)
	kcatWait(t, stack, stack.Names.RunRequestOutcomes(), "r-kcat-bad", `"outcome":"rejected"`, `"code":"invalid_request"`, `nobody`)

	var ask struct {
		CallID   string `json:"call_id"`
		ArgsHash string `json:"args_hash"`
	}
	raw := kcatWait(t, stack, stack.Names.ApprovalRequests(), id, `"call_id":"A"`)
	if err := json.Unmarshal([]byte(raw), &ask); err != nil || ask.ArgsHash == "" {
		t.Fatalf("approval request %s: %v", raw, err)
	}
	kcatProduce(t, stack, stack.Names.Decisions(), id, fmt.Sprintf(
		`{"decision_id":"kn-1","run_id":%q,"call_id":%q,"action":"resume","args_hash":%q,"decided_by":"ops"}`, id, ask.CallID, ask.ArgsHash))
	kcatWait(t, stack, stack.Names.DecisionOutcomes(), id, `"decision_id":"kn-1"`, `"outcome":"applied"`)
	kcatWait(t, stack, stack.Names.RunResults(), id, `"reason":"natural_end"`)

	var asks, created int
	for _, line := range kcatRecords(t, stack, stack.Names.ApprovalRequests()) {
		if strings.HasPrefix(line, id+" ") {
			asks++
		}
	}
	for _, line := range kcatRecords(t, stack, stack.Names.RunRequestOutcomes()) {
		if strings.HasPrefix(line, id+" ") && strings.Contains(line, `"outcome":"created"`) {
			created++
		}
	}
	if asks != 1 || created != 1 {
		t.Fatalf("%d approval requests and %d created answers for %s, want one each", asks, created, id)
	}
}
