package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/topics"
)

// Options tune the demo.
type Options struct {
	Runs    int           // runs in the batch; default 90
	Timeout time.Duration // how long the batch may take; default 2m
	Out     io.Writer     // progress and summary; default io.Discard
	Logger  *slog.Logger  // the stack's logs; default: warnings and errors only, to stderr
}

// Report is the outcome of a demo batch.
type Report struct {
	Runs      int
	Passed    int
	Steps     int
	Calls     int
	Decisions int           // approvals the demo's approver gave or refused
	Elapsed   time.Duration // from submitting the batch to the last result
	Failures  []string      // one line per run that did not end as its script says
}

// OK reports whether every run ended as expected.
func (r Report) OK() bool { return r.Runs > 0 && r.Passed == r.Runs && len(r.Failures) == 0 }

// Run starts an embedded stack, runs the batch and checks it.
func Run(ctx context.Context, o Options) (Report, error) {
	if o.Runs <= 0 {
		o.Runs = 90
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()

	in, err := app.StartInfra("127.0.0.1:0", "", "")
	if err != nil {
		return Report{}, err
	}
	defer in.Close()
	opts := in.Options("")
	opts.Logger = o.Logger
	stack, err := app.Connect(ctx, opts)
	if err != nil {
		return Report{}, err
	}
	defer stack.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Report{}, err
	}
	stackCtx, stopStack := context.WithCancel(ctx)
	stackDone := make(chan error, 1)
	go func() { stackDone <- stack.RunAll(stackCtx, l) }()
	defer func() {
		stopStack()
		<-stackDone
	}()
	base := "http://" + l.Addr().String()
	fmt.Fprintf(o.Out, "stepwise demo: stack up (http=%s kafka=%s)\n", base, in.Kafka.Addrs()[0])

	results, err := followResults(ctx, stack)
	if err != nil {
		return Report{}, err
	}
	c := client{base: base, http: &http.Client{Timeout: 30 * time.Second}}
	if err := c.waitReady(ctx); err != nil {
		return Report{}, err
	}

	batch := make([]map[string]any, o.Runs)
	want := map[string]scenario{}
	for i := range batch {
		req, sc := request(i)
		batch[i] = req
		want[req["run_id"].(string)] = sc
	}
	approverCtx, stopApprover := context.WithCancel(ctx)
	defer stopApprover()
	approvals := make(chan int, 1)
	go func() { approvals <- approve(approverCtx, c) }()
	start := time.Now()
	if err := c.post(ctx, "/v1/runs/batch", batch); err != nil {
		return Report{}, fmt.Errorf("submit the batch: %w", err)
	}
	fmt.Fprintf(o.Out, "submitted %d runs\n", o.Runs)
	finished, err := waitAll(ctx, o.Out, results, want)
	elapsed := time.Since(start)
	stopApprover()
	decided := <-approvals
	if err != nil {
		return Report{}, fmt.Errorf("%w (%d of %d runs finished)", err, len(finished), o.Runs)
	}
	rep := Report{Runs: o.Runs, Elapsed: elapsed, Decisions: decided}
	for id, sc := range want {
		var r runView
		var msgs struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := errors.Join(c.get(ctx, "/v1/runs/"+id, &r), c.get(ctx, "/v1/runs/"+id+"/messages", &msgs)); err != nil {
			return rep, err
		}
		rep.Steps += r.Step + 1
		rep.Calls += len(r.ToolCalls)
		if bad := check(sc, r, len(msgs.Messages)); bad != "" {
			rep.Failures = append(rep.Failures, id+": "+bad)
			continue
		}
		rep.Passed++
	}
	summarize(o.Out, rep)
	return rep, nil
}

// followResults consumes run-results in a group of its own, as a batch
// consumer would, and sends each run id that finished.
func followResults(ctx context.Context, stack *app.Stack) (<-chan string, error) {
	sub, err := stack.Subscriber("stepwise-demo-" + uuid.NewString())
	if err != nil {
		return nil, err
	}
	msgs, err := sub.Subscribe(ctx, stack.Names.RunResults())
	if err != nil {
		_ = sub.Close()
		return nil, err
	}
	out := make(chan string)
	go func() {
		defer sub.Close()
		for m := range msgs {
			res, err := topics.Decode[topics.RunResult](m.Payload)
			m.Ack()
			if err != nil {
				continue
			}
			select {
			case out <- res.RunID:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// waitAll collects results (at least once: duplicates are counted once) until
// every run of the batch finished, printing progress.
func waitAll(ctx context.Context, out io.Writer, results <-chan string, want map[string]scenario) (map[string]bool, error) {
	finished := map[string]bool{}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for len(finished) < len(want) {
		select {
		case id := <-results:
			if _, ok := want[id]; ok {
				finished[id] = true
			}
		case <-tick.C:
			fmt.Fprintf(out, "\r  finished %d/%d", len(finished), len(want))
		case <-ctx.Done():
			fmt.Fprintln(out)
			return finished, fmt.Errorf("the batch did not finish in time: %w", ctx.Err())
		}
	}
	fmt.Fprintf(out, "\r  finished %d/%d\n", len(finished), len(want))
	return finished, nil
}

func summarize(out io.Writer, r Report) {
	secs := r.Elapsed.Seconds()
	fmt.Fprintf(out, "\nsummary\n")
	fmt.Fprintf(out, "  runs        %d (%d as expected, %d not)\n", r.Runs, r.Passed, len(r.Failures))
	for _, sc := range scenarios {
		fmt.Fprintf(out, "    - %s\n", sc.name)
	}
	fmt.Fprintf(out, "  steps       %d\n  tool calls  %d\n  decisions   %d (by the demo's approver, through POST /v1/runs/{id}/decisions)\n", r.Steps, r.Calls, r.Decisions)
	fmt.Fprintf(out, "  elapsed     %s\n", r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "  throughput  %.0f runs/s, %.0f steps/s, %.0f tool calls/s\n",
		float64(r.Runs)/secs, float64(r.Steps)/secs, float64(r.Calls)/secs)
	for _, f := range r.Failures {
		fmt.Fprintf(out, "  FAILED %s\n", f)
	}
}

// client speaks to the gateway.
type client struct {
	base string
	http *http.Client
}

func (c client) waitReady(ctx context.Context) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/readyz", nil)
		if resp, err := c.http.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the gateway did not become ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c client) post(ctx context.Context, path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, nil)
}

func (c client) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	return c.do(req, into)
}

func (c client) do(req *http.Request, into any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, bytes.TrimSpace(body))
	}
	if into == nil {
		return nil
	}
	return json.Unmarshal(body, into)
}
