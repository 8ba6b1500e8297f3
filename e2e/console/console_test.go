package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium to drive: Debian's `chromium`, or what
// STEPWISE_CHROMIUM names. CI installs it (.ci/run); elsewhere the test is
// skipped without one, and fails without one under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("STEPWISE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found (apt-get install chromium, or set STEPWISE_CHROMIUM)")
	}
	t.Skip("no Chromium found (apt-get install chromium, or set STEPWISE_CHROMIUM)")
	return ""
}

// browser starts a headless Chromium for the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// screenshot saves the page as name.png in STEPWISE_SCREENSHOTS (docs/img
// when the screenshots of the docs are renewed), else in a temporary
// directory.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	var png []byte
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A person's path through the web console, in a real browser, against a
// gateway with API keys: the console asks for the key, the approvals inbox
// shows the parked call of a batch's run, the person approves it with
// edited arguments, and sees the run finish and the batch complete.
func TestConsole_approve_a_parked_call_and_see_the_run_finish(t *testing.T) {
	ctx := browser(t)
	base := startDev(t)
	shots := os.Getenv("STEPWISE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}

	// A batch: one run whose refund of 250 parks (pass_decision_to_tool),
	// two that need nobody.
	items := []map[string]any{
		{"run_id": "console-refund", "agent": "approvals", "input": "refund order 7", "metadata": map[string]any{"order": 7},
			"model": json.RawMessage(script(call("R", "refund", `{"order":7,"amount":250}`)))},
		{"run_id": "console-echo-1", "agent": "approvals", "input": "go", "model": json.RawMessage(script(call("E", "echo", `{"i":1}`)))},
		{"run_id": "console-echo-2", "agent": "approvals", "input": "go", "model": json.RawMessage(script(call("E", "echo", `{"i":2}`)))},
	}
	var batch struct {
		BatchID string   `json:"batch_id"`
		RunIDs  []string `json:"run_ids"`
	}
	if code := keyDo(t, "POST", base+"/v1/runs/batch", items, &batch); code != 201 || batch.BatchID == "" {
		t.Fatalf("batch: %d %+v", code, batch)
	}

	// The inbox without a key: the console asks for one.
	var flash string
	card := `#inbox .card[data-run="console-refund"]`
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/inbox"),
		chromedp.WaitVisible(`#flash`, chromedp.ByQuery),
		chromedp.Text(`#flash`, &flash, chromedp.ByQuery),
		chromedp.SendKeys(`#key-input`, consoleKey, chromedp.ByQuery),
		chromedp.Click(`#key-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(card, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("open the inbox: %v (flash %q)", err, flash)
	}
	if !strings.Contains(flash, "API key") {
		t.Fatalf("without a key the console said %q", flash)
	}
	var badge string
	if err := chromedp.Run(ctx, chromedp.WaitVisible(`#inbox-count`, chromedp.ByQuery), chromedp.Text(`#inbox-count`, &badge, chromedp.ByQuery)); err != nil || badge != "1" {
		t.Fatalf("the inbox badge: %v, %q", err, badge)
	}
	screenshot(t, ctx, shots, "console-inbox")

	// Approve with edited arguments: 120 instead of 250.
	var state string
	err = chromedp.Run(ctx,
		chromedp.SetValue(card+` textarea`, `{"order": 7, "amount": 120}`, chromedp.ByQuery),
		chromedp.Click(`//div[@data-run="console-refund"]//button[contains(., "Approve with these arguments")]`, chromedp.BySearch),
		chromedp.WaitVisible(card+`.decided`, chromedp.ByQuery),
		chromedp.Text(card+` .actions span`, &state, chromedp.ByQuery),
	)
	if err != nil || !strings.Contains(state, "Approved") {
		t.Fatalf("approve: %v (%q)", err, state)
	}

	// The run's timeline shows it done, with the refund of 120. The page
	// re-renders on every event, so the parts are read in one evaluation.
	var timeline struct{ Status, Calls, Metadata string }
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/runs/console-refund"),
		chromedp.Poll(`(() => {
			const status = document.querySelector('#run-status'), calls = document.querySelector('#calls');
			const metadata = document.querySelector('#run-metadata');
			if (status?.textContent !== 'done' || !metadata || !calls.querySelector('tr[data-call="R"] .status.succeeded')) return null;
			return {Status: status.textContent, Calls: calls.innerText, Metadata: metadata.textContent};
		})()`, &timeline, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil || !strings.Contains(timeline.Calls, `"amount": 120`) || !strings.Contains(timeline.Calls, "resume by ops") || !strings.Contains(timeline.Metadata, `"order": 7`) {
		t.Fatalf("the run's timeline: %v, status %q, metadata %q, calls:\n%s", err, timeline.Status, timeline.Metadata, timeline.Calls)
	}
	screenshot(t, ctx, shots, "console-run")
	var v struct {
		Status    string `json:"status"`
		ToolCalls []struct {
			CallID string          `json:"call_id"`
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
		} `json:"tool_calls"`
	}
	keyDo(t, "GET", base+"/v1/runs/console-refund", nil, &v)
	if len(v.ToolCalls) != 1 || v.Status != "done" || v.ToolCalls[0].Status != "succeeded" || !strings.Contains(string(v.ToolCalls[0].Result), `"amount":120`) {
		t.Fatalf("the run through the API: %s, calls %+v", v.Status, v.ToolCalls)
	}

	// The batch: all three done.
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/batches/"+batch.BatchID),
		chromedp.Poll(`document.querySelector('#batch-progress')?.textContent === '3 of 3 done' && / out$/.test(document.querySelector('#batch-usage')?.textContent)`, nil, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		t.Fatalf("the batch never showed 3 of 3 done and its usage: %v", err)
	}
	screenshot(t, ctx, shots, "console-batch")

	// The runs list and the dead-letter topic load too.
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/runs"),
		chromedp.WaitVisible(`tr[data-run="console-echo-2"]`, chromedp.ByQuery),
		chromedp.Navigate(base+"/#/dead-letters"),
		chromedp.WaitVisible(`main table tbody tr`, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("runs and dead letters: %v", err)
	}
	chromedp.Run(ctx, chromedp.Navigate(base+"/#/runs"), chromedp.WaitVisible(`tr[data-run="console-echo-2"]`, chromedp.ByQuery))
	screenshot(t, ctx, shots, "console-runs")
}

// A run whose calls started child runs shows them on its page, with their
// status, each a link to the child's page, which links back to its parent.
func TestConsole_a_runs_page_shows_its_child_runs_and_its_parent(t *testing.T) {
	ctx := browser(t)
	base := startDev(t)
	body := map[string]any{"run_id": "console-research", "agent": "researcher", "input": "go",
		"model": json.RawMessage(script(call("A", "summarise", `{"document":"a"}`), call("B", "summarise", `{"document":"b"}`)))}
	if code := keyDo(t, "POST", base+"/v1/runs", body, nil); code != 201 {
		t.Fatalf("create run: %d", code)
	}
	var children string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/runs/console-research"),
		chromedp.WaitVisible(`#key-input`, chromedp.ByQuery),
		chromedp.SendKeys(`#key-input`, consoleKey, chromedp.ByQuery),
		chromedp.Click(`#key-form button[type=submit]`, chromedp.ByQuery),
		chromedp.Poll(`(() => {
			const rows = document.querySelectorAll('#children tr[data-child] .status.done');
			return rows.length === 2 ? document.querySelector('#children').innerText : null;
		})()`, &children, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil || !strings.Contains(children, "console-research.A") || !strings.Contains(children, "console-research.B") {
		t.Fatalf("the parent's page: %v, children:\n%s", err, children)
	}
	var parent string
	err = chromedp.Run(ctx,
		chromedp.Click(`#children tr[data-child="console-research.A"] a`, chromedp.ByQuery),
		chromedp.WaitVisible(`#run-parent a`, chromedp.ByQuery),
		chromedp.Text(`#run-parent`, &parent, chromedp.ByQuery),
	)
	if err != nil || !strings.Contains(parent, "console-research") || !strings.Contains(parent, "→ A") {
		t.Fatalf("the child's page: %v, parent %q", err, parent)
	}
}

// A run handed from triage to refunds names, on its page, the agent that
// holds it, the version of it the run is pinned to, and who held each
// step: its calls' and its events'.
func TestConsole_a_handed_off_run_names_who_held_each_step(t *testing.T) {
	ctx := browser(t)
	base := startDev(t)
	model := `{"provider":"script","turns":[{"text":"over to refunds","tool_calls":[` + call("H", "transfer_to_refunds", `{}`) + `]},
		{"text":"refunding","tool_calls":[` + call("E", "echo", `{"order":7}`) + `]},{"text":"done"}]}`
	run := map[string]any{"run_id": "console-handoff", "agent": "triage", "input": "refund order 7", "model": json.RawMessage(model)}
	if code := keyDo(t, "POST", base+"/v1/runs", run, nil); code != 201 {
		t.Fatalf("create the run: %d", code)
	}
	var page struct{ Holder, Version, Calls, Events string }
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/runs/console-handoff"),
		chromedp.WaitVisible(`#key-input`, chromedp.ByQuery),
		chromedp.SendKeys(`#key-input`, consoleKey, chromedp.ByQuery),
		chromedp.Click(`#key-form button[type=submit]`, chromedp.ByQuery),
		chromedp.Poll(`(() => {
			const status = document.querySelector('#run-status'), holder = document.querySelector('#run-holder');
			const held = (sel) => document.querySelector(sel)?.querySelector('.held-by')?.textContent;
			if (status?.textContent !== 'done' || held('#calls tr[data-call="H"]') !== 'triage' || held('#calls tr[data-call="E"]') !== 'refunds') return null;
			return {Holder: holder?.textContent || '', Version: document.querySelector('#run-version')?.textContent || '',
				Calls: document.querySelector('#calls').innerText, Events: document.querySelector('.events').innerText};
		})()`, &page, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil || page.Holder != "refunds" || !strings.Contains(page.Events, "run.handoff") {
		t.Fatalf("the run's page: %v, held by %q, calls:\n%s\nevents:\n%s", err, page.Holder, page.Calls, page.Events)
	}
	var got struct {
		AgentVersion string `json:"agent_version"`
	}
	if code := keyDo(t, "GET", base+"/v1/runs/console-handoff", nil, &got); code != 200 || got.AgentVersion == "" || page.Version != got.AgentVersion {
		t.Fatalf("the page shows version %q; the run is on %q (%d)", page.Version, got.AgentVersion, code)
	}
}

// script is a script model whose first turn proposes calls and whose
// second answers.
func script(calls ...string) string {
	return `{"provider":"script","turns":[{"text":"working","tool_calls":[` + strings.Join(calls, ",") + `]},{"text":"done"}]}`
}

// call is one proposed tool call of a script model's turn.
func call(id, name, args string) string {
	return fmt.Sprintf(`{"id":%q,"name":%q,"arguments":%s}`, id, name, args)
}

// A batch with a failed run: its page offers to re-run the failed runs;
// the button requests them again and links to the batch of the new runs,
// each linked to the run it re-runs.
func TestConsole_rerun_a_batchs_failed_runs(t *testing.T) {
	ctx := browser(t)
	base := startDev(t)

	items := []map[string]any{
		{"run_id": "rerun-broken", "agent": "broken", "input": "go"},
		{"run_id": "rerun-fine", "agent": "approvals", "input": "go", "model": json.RawMessage(script(call("E", "echo", `{"i":1}`)))},
	}
	var batch struct {
		BatchID string `json:"batch_id"`
	}
	if code := keyDo(t, "POST", base+"/v1/runs/batch", items, &batch); code != 201 {
		t.Fatalf("batch: %d %+v", code, batch)
	}
	var link string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.Evaluate(fmt.Sprintf(`localStorage.setItem('stepwise.apiKey', %q)`, consoleKey), nil),
		chromedp.Navigate(base+"/#/batches/"+batch.BatchID),
		chromedp.Poll(`document.querySelector('#batch-rerun:not([hidden])')?.textContent === 'Re-run 1 failed run'`, nil, chromedp.WithPollingTimeout(60*time.Second)),
		chromedp.Click(`#batch-rerun`, chromedp.ByQuery),
		chromedp.WaitVisible(`#batch-rerun-link`, chromedp.ByQuery),
		chromedp.Text(`#batch-rerun-link`, &link, chromedp.ByQuery),
	)
	if err != nil || !strings.HasPrefix(link, "1 runs requested again: follow batch rerun-") {
		t.Fatalf("re-run from the batch page: %v (%q)", err, link)
	}
	rerunBatch := strings.TrimPrefix(link, "1 runs requested again: follow batch ")
	var list struct {
		Runs []struct {
			RunID   string `json:"run_id"`
			RerunOf string `json:"rerun_of"`
		} `json:"runs"`
	}
	for deadline := time.Now().Add(30 * time.Second); len(list.Runs) == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the re-run's batch %s has no run", rerunBatch)
		}
		keyDo(t, "GET", base+"/v1/runs?batch_id="+rerunBatch, nil, &list)
	}
	if len(list.Runs) != 1 || list.Runs[0].RerunOf != "rerun-broken" {
		t.Fatalf("the re-run's runs: %+v, want one re-running rerun-broken", list.Runs)
	}

	// The new run's page links to the run it re-runs.
	var origin string
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/runs/"+list.Runs[0].RunID),
		chromedp.WaitVisible(`#run-rerun-of a`, chromedp.ByQuery),
		chromedp.Text(`#run-rerun-of a`, &origin, chromedp.ByQuery),
	)
	if err != nil || origin != "rerun-broken" {
		t.Fatalf("the re-run's page: %v, links to %q", err, origin)
	}
}

// The schedules page lists a schedule, pauses and resumes it, and starts
// a run of it now, whose page names the schedule.
func TestConsole_schedules_are_listed_paused_resumed_and_run_now(t *testing.T) {
	ctx := browser(t)
	base := startDev(t)
	body := map[string]any{"schedule_id": "nightly", "cron": "0 3 * * *", "timezone": "Asia/Tokyo",
		"run": map[string]any{"agent": "approvals", "input": "report"}}
	if code := keyDo(t, "POST", base+"/v1/schedules", body, nil); code != 201 {
		t.Fatalf("create schedule: %d", code)
	}
	row := `#schedules tr[data-schedule="nightly"]`
	var next string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/schedules"),
		chromedp.SendKeys(`#key-input`, consoleKey, chromedp.ByQuery),
		chromedp.Click(`#key-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.Click(row+` .actions button`, chromedp.ByQuery), // Pause
		chromedp.WaitVisible(row+` .next .status.paused`, chromedp.ByQuery),
		chromedp.Click(row+` .actions button`, chromedp.ByQuery), // Resume
		chromedp.Poll(`document.querySelector('`+row+` .next')?.textContent.match(/\d/) ? document.querySelector('`+row+` .next').textContent : null`, &next, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Click(row+` .actions button:nth-child(2)`, chromedp.ByQuery), // Run now
		chromedp.WaitVisible(row+` td a[href^="#/runs/nightly-now-"]`, chromedp.ByQuery),
		chromedp.Click(row+` td a[href^="#/runs/nightly-now-"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#run-schedule')?.textContent.startsWith('nightly, tick')`, nil, chromedp.WithPollingTimeout(10*time.Second)),
	)
	if err != nil {
		t.Fatalf("the schedules page: %v (next tick %q)", err, next)
	}
}

// On a run's page, the Approvals badge follows the run: once its parked
// call is decided (here through the API, as another operator would) and
// the run goes on, the badge no longer counts it. The badge's own 5 s
// timer is held still, so what the badge shows comes from the page.
func TestConsole_the_approvals_badge_drops_a_call_decided_while_its_run_page_is_open(t *testing.T) {
	ctx := browser(t)
	base := startDev(t)
	body := map[string]any{"run_id": "console-badge", "agent": "approvals", "input": "refund order 8",
		"model": json.RawMessage(script(call("R", "refund", `{"order":8,"amount":300}`)))}
	if code := keyDo(t, "POST", base+"/v1/runs", body, nil); code != 201 {
		t.Fatalf("create the run: %d", code)
	}
	holdTimer := `{ const every = window.setInterval; window.setInterval = (fn, ms, ...args) => ms === 5000 ? 0 : every(fn, ms, ...args); }`
	err := chromedp.Run(ctx,
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, err := page.AddScriptToEvaluateOnNewDocument(holdTimer).Do(ctx)
			return err
		}),
		chromedp.Navigate(base+"/#/runs/console-badge"),
		chromedp.WaitVisible(`#key-input`, chromedp.ByQuery),
		chromedp.SendKeys(`#key-input`, consoleKey, chromedp.ByQuery),
		chromedp.Click(`#key-form button[type=submit]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#inbox-count')?.textContent === '1' && !document.querySelector('#inbox-count').hidden`,
			nil, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		t.Fatalf("the badge never counted the parked call: %v", err)
	}

	var pending struct {
		Pending []struct {
			ArgsHash string `json:"args_hash"`
		} `json:"pending"`
	}
	if code := keyDo(t, "GET", base+"/v1/pending", nil, &pending); code != 200 || len(pending.Pending) != 1 {
		t.Fatalf("pending: %d %+v", code, pending)
	}
	decision := map[string]any{"call_id": "R", "action": "resume", "args_hash": pending.Pending[0].ArgsHash,
		"payload": map[string]any{"order": 8, "amount": 300}}
	if code := keyDo(t, "POST", base+"/v1/runs/console-badge/decisions", decision, nil); code != 202 {
		t.Fatalf("decide: %d", code)
	}

	if err := chromedp.Run(ctx, chromedp.Poll(`document.querySelector('#run-status')?.textContent === 'done'`, nil, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the run's page never showed it done: %v", err)
	}
	var badge string
	err = chromedp.Run(ctx, chromedp.Poll(`document.querySelector('#inbox-count').hidden`, nil, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		_ = chromedp.Run(ctx, chromedp.Evaluate(`document.querySelector('#inbox-count').textContent`, &badge))
		t.Fatalf("after the decision the badge still reads %q: %v", badge, err)
	}
}

// The runs page searches as GET /v1/runs does: a metadata value of a
// declared key finds its runs, the search stays in the address, and an
// undeclared key is refused with the gateway's reason.
func TestConsole_the_runs_page_searches_by_metadata(t *testing.T) {
	ctx := browser(t)
	base := startDev(t)
	for i, order := range []string{"7", "8", "7"} {
		body := map[string]any{"run_id": fmt.Sprintf("console-search-%d", i), "agent": "approvals", "input": "go",
			"start_at": "2099-01-01T00:00:00Z", "metadata": map[string]any{"order": order, "customer": "acme"}}
		if code := keyDo(t, "POST", base+"/v1/runs", body, nil); code != 201 {
			t.Fatalf("create run %d: %d", i, code)
		}
	}
	var found struct {
		Rows    []string
		Address string
	}
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/runs"),
		chromedp.WaitVisible(`#key-input`, chromedp.ByQuery),
		chromedp.SendKeys(`#key-input`, consoleKey, chromedp.ByQuery),
		chromedp.Click(`#key-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`tr[data-run="console-search-1"]`, chromedp.ByQuery),
		chromedp.SendKeys(`#filter-meta`, "order=7", chromedp.ByQuery),
		chromedp.Click(`form.filters button[type=submit]`, chromedp.ByQuery),
		chromedp.Poll(`(() => {
			const rows = [...document.querySelectorAll('main tbody tr[data-run]')].map((r) => r.dataset.run);
			return rows.length === 2 ? {Rows: rows, Address: location.hash} : null;
		})()`, &found, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil || !slices.Equal(found.Rows, []string{"console-search-2", "console-search-0"}) || found.Address != "#/runs?meta.order=7" {
		t.Fatalf("search by order=7: %v, rows %v at %q", err, found.Rows, found.Address)
	}
	var flash string
	err = chromedp.Run(ctx,
		chromedp.SetValue(`#filter-meta`, "customer=acme", chromedp.ByQuery),
		chromedp.Click(`form.filters button[type=submit]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('#flash')?.textContent.includes('customer')`, nil, chromedp.WithPollingTimeout(30*time.Second)),
		chromedp.Text(`#flash`, &flash, chromedp.ByQuery),
	)
	if err != nil || !strings.Contains(flash, "searchable_metadata") {
		t.Fatalf("search by an undeclared key: %v, flash %q", err, flash)
	}
}

// A run whose model is in batch mode shows its step awaiting_inference on
// its page, with a link to the Inference jobs page, which shows its
// model's open batch: the requests waiting and the oldest's wait.
func TestConsole_a_run_awaiting_its_batch_and_the_open_batch_it_waits_in(t *testing.T) {
	ctx := browser(t)
	base := startDev(t)
	for _, id := range []string{"bulk-1", "bulk-2"} {
		if code := keyDo(t, "POST", base+"/v1/runs", map[string]any{"run_id": id, "agent": "bulk", "input": "go"}, nil); code != 201 {
			t.Fatalf("create %s: %d", id, code)
		}
	}
	model := `#inference-models section[data-model="openai:bulk-model"]`
	var waiting, oldest string
	err := chromedp.Run(ctx,
		chromedp.Navigate(base+"/#/runs/bulk-1"),
		chromedp.SendKeys(`#key-input`, consoleKey, chromedp.ByQuery),
		chromedp.Click(`#key-form button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#run-step-state .status.awaiting_inference`, chromedp.ByQuery),
		chromedp.Click(`#run-step-state a[href="#/inference-jobs"]`, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('`+model+` .waiting')?.textContent === '2'`, nil, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Text(model+` .waiting`, &waiting, chromedp.ByQuery),
		chromedp.Text(model+` .oldest`, &oldest, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("the inference jobs page: %v (waiting %q, oldest %q)", err, waiting, oldest)
	}
	if !strings.HasSuffix(oldest, " s") && !strings.Contains(oldest, "min") {
		t.Fatalf("the oldest wait shows %q", oldest)
	}
	if dir := os.Getenv("STEPWISE_SCREENSHOTS"); dir != "" {
		screenshot(t, ctx, dir, "console-inference-jobs")
	}
}
