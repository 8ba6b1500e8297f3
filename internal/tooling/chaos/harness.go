package chaos

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pacing of the harness's own requests.
const (
	submitTick       = 250 * time.Millisecond // one batch of runs per tick during the churn
	maxBatch         = 500                    // runs per POST /v1/runs/batch
	submitRetryFor   = 60 * time.Second       // a batch the gateway refuses is sent again for this long
	pollEvery        = 500 * time.Millisecond // how often open runs are looked at after the churn
	httpParallelism  = 16                     // requests the oracle has in flight
	referenceTimeout = 60 * time.Second       // for the undisturbed reference runs to end
	resultsWait      = 15 * time.Second       // for every done run's RunResult to appear
)

// Run runs one chaos experiment: it starts stepwise as separate processes,
// runs one undisturbed reference run per script variant, then submits
// cfg.Runs runs while it kills workers and Redis and duplicates records for
// cfg.Churn, waits up to cfg.Settle for every run to end, and judges each
// run against the reference of its script.
//
// The returned report holds the figures; check Report.Failed. An error
// means the harness itself could not do its job (a program did not build
// or start, a reference run did not run as scripted, ctx ended): the report
// then holds what was measured so far, or is nil. Every process the harness
// started is killed before Run returns, also when SIGINT or SIGTERM arrives
// meanwhile (which ends the experiment as a cancel of ctx would).
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	logf := cfg.Logf
	tim, _ := parseTimings(cfg.WorkerYAML) // checked by Validate
	grace := time.Duration(0)              // long work in the scripts, for the rolling restart
	if cfg.Rolling {
		grace = tim.grace()
	}
	rep = &Report{Started: time.Now(), Runs: cfg.Runs, Settings: settingsOf(&cfg), Terminations: map[string]int{}}
	defer func() {
		if err != nil && rep != nil {
			rep.Aborted = err.Error()
		}
	}()

	dir, temp := cfg.WorkDir, cfg.WorkDir == ""
	if temp {
		if dir, err = os.MkdirTemp("", "stepwise-chaos-"); err != nil {
			return nil, err
		}
	} else if err := mkdir(dir); err != nil {
		return nil, err
	}
	rep.WorkDir = dir
	defer func() {
		if temp && !cfg.KeepWorkDir && err == nil && !rep.Failed() {
			_ = os.RemoveAll(dir)
			rep.WorkDir = ""
		}
	}()

	bin := cfg.BinDir
	if bin == "" {
		src := cfg.SrcDir
		if src == "" {
			if src, err = moduleRoot(ctx); err != nil {
				return rep, err
			}
		}
		rep.Source = describeSource(ctx, src)
		bin = filepath.Join(dir, "bin")
		logf("building the programs from %s (%s)", src, rep.Source)
		if err := buildPrograms(ctx, src, bin); err != nil {
			return rep, err
		}
	} else if err := checkPrograms(bin); err != nil {
		return rep, err
	}

	logf("starting the broker, redis-server, the gateway, %d step and %d tool workers (logs in %s)", cfg.StepWorkers, cfg.ToolWorkers, filepath.Join(dir, "logs"))
	var batch *batchAPI
	batchURL := ""
	if cfg.batches() {
		batch = newBatchAPI()
		defer batch.close()
		batchURL = batch.srv.URL
	}
	st, err := startStack(ctx, &cfg, dir, bin, batchURL)
	if err != nil {
		return rep, err
	}
	defer st.close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if st.broker != nil {
		go func() {
			select {
			case <-st.broker.exited():
				cancel(errBrokerGone)
			case <-ctx.Done():
			}
		}()
	}
	fail := func(err error) (*Report, error) {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil && !errors.Is(err, c) {
			err = fmt.Errorf("%w (%v)", err, c)
		}
		return rep, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: st.redis.addr})
	defer rdb.Close()

	nonce := newNonce(cfg.Seed)
	refs, err := runReferences(ctx, st, &cfg, nonce, grace)
	if err != nil {
		return fail(err)
	}
	rep.References = len(refs.byID)
	logf("%d reference runs ran as scripted (runs, forks, children)", rep.References)

	ids := make([]string, cfg.Runs)
	width := len(strconv.Itoa(cfg.Runs - 1))
	for i := range ids {
		ids[i] = fmt.Sprintf("chaos-%s-%0*d", nonce, width, i)
	}

	rng := rand.New(rand.NewPCG(cfg.Seed, 0xc4a05))
	var dup *duplicator
	if cfg.churning() && cfg.Duplicate > 0 {
		topics, err := stepwiseTopics(st.brokers, topicPrefix)
		if err != nil {
			return fail(err)
		}
		if dup, err = newDuplicator(st.brokers, topics, cfg.Duplicate, cfg.Seed, logf); err != nil {
			return fail(err)
		}
		defer dup.stop()
		logf("duplicating %.0f%% of the records of %s", 100*cfg.Duplicate, strings.Join(topics, ", "))
	}

	churnStart := time.Now()
	var scheds []*tickSchedule
	if cfg.schedules() {
		scheds = newTickSchedules(nonce)
		for _, s := range scheds {
			if err := retry(ctx, 30*time.Second, 250*time.Millisecond, func() error { return s.create(ctx, st.gw) }); err != nil {
				return fail(err)
			}
		}
		logf("schedules %s every %s (%s) and %s every %s (%s) created", scheds[0].id, scheds[0].every, scheds[0].overlap, scheds[1].id, scheds[1].every, scheds[1].overlap)
	}
	brokersChurned := make(chan brokerCounts, 1)
	if cfg.killsBrokers() {
		brng := rand.New(rand.NewPCG(cfg.Seed, 0xb40c3))
		moveAt := cfg.Churn / 2
		logf("churn for %s: a broker killed -9 every ~%s, one restarted cleanly at %s", cfg.Churn, cfg.BrokerKillEvery, moveAt)
		go func() { brokersChurned <- churnBrokers(ctx, st, brng, cfg.Churn, cfg.BrokerKillEvery, moveAt) }()
	} else {
		brokersChurned <- brokerCounts{}
	}
	churned := make(chan churnCounts, 1)
	rolled := make(chan rollingCounts, 1)
	window := time.Duration(0)
	if cfg.churning() {
		window = cfg.Churn * 8 / 10
		redisAt := time.Duration(-1)
		if cfg.killsRedis() {
			redisAt = cfg.Churn*3/10 + time.Duration(rng.Int64N(int64(cfg.Churn*3/10)+1))
		}
		if cfg.Rolling {
			logf("churn for %s: %d rounds of restarting every worker in turn (SIGTERM, exit, replacement up); shutdown grace %s, a pause over %s fails", cfg.Churn, cfg.Rounds, tim.grace(), tim.pauseLimit())
			go func() { rolled <- rollingRestart(ctx, st, cfg.Rounds, cfg.Churn, tim) }()
		} else {
			logf("churn for %s: a worker killed every ~%s, redis-server killed: %v", cfg.Churn, cfg.KillEvery, cfg.killsRedis())
			rolled <- rollingCounts{}
		}
		var holder func() string
		if batch != nil {
			holder = batch.holder
		}
		go func() { churned <- churn(ctx, st, rng, cfg.Churn, cfg.KillEvery, redisAt, holder) }()
	} else {
		churned <- churnCounts{}
		rolled <- rollingCounts{}
	}
	type submission struct {
		accepted []int
		forks    []member
		problems []string
	}
	submittedc := make(chan submission, 1)
	go func() {
		accepted, problems := submit(ctx, st.gw, &cfg, ids, window, grace)
		submittedc <- submission{accepted: accepted, problems: problems}
	}()
	forkedc := make(chan submission, 1)
	forkUntil := churnStart.Add(max(0, cfg.Churn) + cfg.Settle)
	go func() {
		var forks []member
		var problems []string
		if cfg.composes() {
			forks, problems = forkRuns(ctx, st.gw, &cfg, ids, refs.roots, forkUntil)
		}
		forkedc <- submission{forks: forks, problems: problems}
	}()
	cc := <-churned
	rc := <-rolled
	bc := <-brokersChurned
	churnEnd := time.Now()
	if dup != nil {
		dup.stop()
	}
	rep.ChurnS = churnEnd.Sub(churnStart).Seconds()
	rep.Kills, rep.Restarts, rep.BatcherKills = cc.kills, cc.restarts, cc.batcherKills
	rep.RedisKills, rep.RedisRestarts, rep.RedisDownS = cc.redisKills, cc.redisRestarts, cc.redisDown.Seconds()
	rep.HarnessErrors = append(rep.HarnessErrors, cc.errors...)
	rep.HarnessErrors = append(rep.HarnessErrors, rc.errors...)
	rep.BrokerKills, rep.BrokerRestarts, rep.LeaderMoves = bc.kills, bc.restarts, bc.moves
	rep.BrokerDownS = bc.longestDown.Seconds()
	rep.HarnessErrors = append(rep.HarnessErrors, bc.errors...)
	if cfg.Rolling {
		rep.Rolling = rollingFigures(cfg.Rounds, tim, rc.restarts)
	}
	if dup != nil {
		rep.DuplicatesByTopic, rep.Duplicates, rep.DuplicateFailures = dup.total(topicPrefix)
	}
	sub := <-submittedc
	submitted := sub.accepted
	rep.Submitted = len(submitted)
	rep.HarnessErrors = append(rep.HarnessErrors, sub.problems...)
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	logf("churn over after %.1fs: %d kills, %d graceful restarts, %d redis kills, %d broker kills, %d duplicates; %d runs submitted", rep.ChurnS, rep.Kills, len(rc.restarts), rep.RedisKills, rep.BrokerKills, rep.Duplicates, rep.Submitted)

	for _, s := range scheds {
		if err := retry(ctx, 30*time.Second, 250*time.Millisecond, func() error { return s.pause(ctx, st.gw) }); err != nil {
			return fail(err)
		}
	}

	deadline := churnEnd.Add(cfg.Settle)
	members := make([]member, 0, len(submitted))
	for _, i := range submitted {
		if batchRun(i, cfg.BatchShare) {
			members = append(members, member{id: ids[i], root: ids[i], refRoot: refs.batch, kind: memberBatch})
			continue
		}
		members = append(members, member{id: ids[i], root: ids[i], refRoot: refs.roots[i%cfg.Variants], kind: memberRun})
	}
	doneAt := map[string]time.Time{}
	var took []time.Duration
	settleMembers(ctx, st.gw, members, deadline, doneAt, &took, logf)
	forked := <-forkedc
	rep.HarnessErrors = append(rep.HarnessErrors, forked.problems...)
	more := forked.forks
	if len(scheds) > 0 {
		var ticks []string
		rep.Ticks, rep.TickProblems, ticks, err = listTicks(ctx, st.gw, scheds, churnStart, deadline)
		if err != nil {
			return fail(err)
		}
		for _, id := range ticks {
			more = append(more, member{id: id, root: id, refRoot: refs.tick, kind: memberTick})
		}
	}
	if len(more) > 0 {
		logf("%d forks and %d runs of the schedules", len(forked.forks), len(more)-len(forked.forks))
		settleMembers(ctx, st.gw, more, deadline, doneAt, &took, logf)
		members = append(members, more...)
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}

	// What the topics hold tells a lost message from a stopped or
	// congested consumer, and how much the faults multiplied the traffic.
	if rep.Backlog, err = backlog(st.brokers, topicPrefix); err != nil {
		rep.HarnessErrors = append(rep.HarnessErrors, err.Error())
	}
	logf("judging %d runs", len(members))
	js, err := judgeFamilies(ctx, st, rdb, refs, members, doneAt, &took, deadline, append(cc.stops, rc.stops...), logf)
	if err != nil {
		return fail(err)
	}
	for _, s := range scheds {
		if err := st.gw.deleteSchedule(ctx, s.id); err != nil {
			rep.HarnessErrors = append(rep.HarnessErrors, fmt.Sprintf("delete schedule %s: %v", s.id, err))
		}
	}
	rep.RunSeconds = durationFigures(took)
	var last time.Time
	for _, t := range doneAt {
		if t.After(last) {
			last = t
		}
	}
	rep.RecoveryS = max(0, last.Sub(churnEnd).Seconds())
	if len(doneAt) < len(js) {
		rep.RecoveryS = -1
	}
	var isCopy func(topicPartition, int64) bool
	if dup != nil {
		isCopy = dup.isCopy
	}
	if err := checkResults(ctx, st.brokers, js, rep, isCopy); err != nil {
		return fail(err)
	}
	tally(rep, js)
	if batch != nil {
		batch.figures(rep)
	}
	limit := time.Duration(0)
	if cfg.Rolling {
		limit = tim.pauseLimit()
	}
	tallyPauses(rep, js, limit, churnStart, rep.Rolling)
	if rep.Stuck > 0 {
		logf("%d runs are stuck: asking every worker and the gateway for a goroutine dump (SIGQUIT) into its log", rep.Stuck)
		st.dumpGoroutines()
	}
	if err := countDeadLetters(st.brokers, rep); err != nil {
		return fail(err)
	}
	rep.Crashes, rep.CrashedProcesses = st.crashes()
	return rep, nil
}

// durationFigures returns the median, 99th percentile and maximum of d,
// in seconds.
func durationFigures(d []time.Duration) *Durations {
	if len(d) == 0 {
		return nil
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(q float64) float64 { return d[min(len(d)-1, int(q*float64(len(d))))].Seconds() }
	return &Durations{P50: at(0.5), P99: at(0.99), Max: d[len(d)-1].Seconds()}
}

// newNonce returns a short id that keeps the runs of two experiments apart
// in logs.
func newNonce(seed uint64) string {
	var b [3]byte
	r := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return hex.EncodeToString(b[:])
}

// describeSource names the commit of src, "+ changes" when its tree
// differs, or "" outside git.
func describeSource(ctx context.Context, src string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", src, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "-C", src, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		s += " + uncommitted changes"
	}
	return s
}

// references are the undisturbed runs the oracle judges by, by run id:
// one run of each script variant (roots[v] is variant v's), with its
// children and its fork when the variant has them, one run of the
// schedules' script (tick) and one of the batch agent (batch).
type references struct {
	byID  map[string]*reference
	roots []string
	tick  string
	batch string
}

// runReferences runs one run of each script variant, one of the
// schedules' script and one of the batch agent, undisturbed, forks those
// of the variants forkStep names once they are done, and keeps what each
// run, fork and child ended with.
func runReferences(ctx context.Context, st *stack, cfg *Config, nonce string, grace time.Duration) (*references, error) {
	refs := &references{byID: map[string]*reference{}, tick: fmt.Sprintf("chaos-%s-reftick", nonce), batch: fmt.Sprintf("chaos-%s-refbatch", nonce)}
	var reqs []createRequest
	scripts := make([]scriptModel, cfg.Variants)
	for v := range cfg.Variants {
		id := fmt.Sprintf("chaos-%s-ref%02d", nonce, v)
		scripts[v] = newScript(cfg.Seed, v, cfg.Steps, id, grace, cfg.composes())
		refs.roots = append(refs.roots, id)
		reqs = append(reqs, createRequest{RunID: id, Agent: agentName, Input: runInput, Model: &scripts[v]})
	}
	if cfg.schedules() {
		reqs = append(reqs, createRequest{RunID: refs.tick, Agent: agentName, Input: tickInput, Model: &tickScript})
	}
	if cfg.batches() {
		reqs = append(reqs, createRequest{RunID: refs.batch, Agent: batchAgent, Input: runInput})
	}
	if err := retry(ctx, 30*time.Second, 250*time.Millisecond, func() error { return st.gw.createBatch(ctx, reqs) }); err != nil {
		return nil, fmt.Errorf("submit the reference runs: %w", err)
	}
	deadline := time.Now().Add(referenceTimeout)
	for v, id := range refs.roots {
		if err := refs.take(ctx, st, deadline, v, id, id, scripts[v], 0); err != nil {
			return nil, err
		}
		step, ok := forkStep(v, cfg.Steps)
		if !ok || !cfg.composes() {
			continue
		}
		fork := id + forkSuffix
		if err := retry(ctx, time.Until(deadline), 100*time.Millisecond, func() error { return st.gw.fork(ctx, id, step, fork) }); err != nil {
			return nil, fmt.Errorf("fork the reference run %s from step %d: %w", id, step, err)
		}
		if err := refs.take(ctx, st, deadline, v, fork, id, scripts[v], step+1); err != nil {
			return nil, err
		}
	}
	if cfg.schedules() {
		if err := refs.take(ctx, st, deadline, -1, refs.tick, refs.tick, tickScript, 0); err != nil {
			return nil, err
		}
	}
	if cfg.batches() {
		if err := refs.take(ctx, st, deadline, -1, refs.batch, refs.batch, batchScript, 0); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// take waits for the reference run id (of variant v, family root, script
// s, its first step first) to end, keeps its history and checks that it
// ran as scripted, then does the same for each of its children.
func (refs *references) take(ctx context.Context, st *stack, deadline time.Time, v int, id, root string, s scriptModel, first int) error {
	var view runView
	err := retry(ctx, time.Until(deadline), 100*time.Millisecond, func() (err error) {
		if view, err = st.gw.run(ctx, id); err == nil && view.Status != "done" {
			err = fmt.Errorf("status %s at step %d", view.Status, view.Step)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("the undisturbed reference run %s did not end within %s: %w (logs: %s)", id, referenceTimeout, err, filepath.Join(st.dir, "logs"))
	}
	msgs, err := st.gw.messages(ctx, id)
	if err != nil {
		return fmt.Errorf("messages of %s: %w", id, err)
	}
	evs, complete, err := st.gw.events(ctx, id)
	if err != nil || !complete {
		return fmt.Errorf("events of %s: complete=%v, %v", id, complete, err)
	}
	r := &reference{variant: v, runID: id, root: root, script: s, first: first}
	if r.hist, err = normalize(view, msgs, root); err != nil {
		return err
	}
	r.commits = commitCounts(evs)
	if err := checkReference(r, view, evs); err != nil {
		return err
	}
	if want := s.countFrom(first, childTool); len(view.Children) != want {
		return fmt.Errorf("the undisturbed reference run %s (variant %d) started %d children, want %d: %+v", id, v, len(view.Children), want, view.Children)
	}
	refs.byID[id] = r
	for _, c := range view.Children {
		if err := refs.take(ctx, st, deadline, v, c.RunID, root, childScript, 0); err != nil {
			return err
		}
	}
	return nil
}

// submit creates the runs through POST /v1/runs/batch, spread evenly over
// window (all at once when it is 0), and returns the indexes of the runs
// the gateway accepted. Their scripts hold long work when grace > 0 (see
// newScript). A refused batch is sent again (an idempotent replay) for up
// to submitRetryFor; a batch still refused then is given up and reported
// among the problems.
func submit(ctx context.Context, gw *gateway, cfg *Config, ids []string, window, grace time.Duration) (accepted []int, problems []string) {
	ticks := max(1, int(window/submitTick))
	per := min(maxBatch, (len(ids)+ticks-1)/ticks)
	start := time.Now()
	for k, lo := 0, 0; lo < len(ids); k, lo = k+1, lo+per {
		hi := min(len(ids), lo+per)
		sleep(ctx, time.Until(start.Add(time.Duration(k)*submitTick)))
		if ctx.Err() != nil {
			return accepted, problems
		}
		reqs := make([]createRequest, 0, hi-lo)
		for i := lo; i < hi; i++ {
			if batchRun(i, cfg.BatchShare) {
				reqs = append(reqs, createRequest{RunID: ids[i], Agent: batchAgent, Input: runInput})
				continue
			}
			script := newScript(cfg.Seed, i%cfg.Variants, cfg.Steps, ids[i], grace, cfg.composes())
			reqs = append(reqs, createRequest{RunID: ids[i], Agent: agentName, Input: runInput, Model: &script})
		}
		tries := 0
		err := retry(ctx, submitRetryFor, submitTick, func() error { tries++; return gw.createBatch(ctx, reqs) })
		if err != nil {
			problems = append(problems, fmt.Sprintf("runs %s…%s were not accepted after %d tries: %v", ids[lo], ids[hi-1], tries, err))
			continue
		}
		if tries > 1 {
			cfg.Logf("the batch %s…%s was accepted at try %d", ids[lo], ids[hi-1], tries)
		}
		for i := lo; i < hi; i++ {
			accepted = append(accepted, i)
		}
	}
	return accepted, problems
}

// settle looks at the runs of ids that are not done, every pollEvery,
// until all are done or deadline passes (once at least), and returns when
// each done run ended (its updated_at) and how long it took from its
// creation.
func settle(ctx context.Context, gw *gateway, ids []string, deadline time.Time, logf func(string, ...any)) (doneAt map[string]time.Time, took []time.Duration) {
	doneAt = map[string]time.Time{}
	open := make([]int, len(ids))
	for i := range open {
		open[i] = i
	}
	lastLog := time.Now()
	for len(open) > 0 && ctx.Err() == nil {
		var mu sync.Mutex
		var still []int
		parallel(ctx, open, func(i int) {
			v, err := gw.run(ctx, ids[i])
			mu.Lock()
			defer mu.Unlock()
			if err == nil && v.Status == "done" {
				doneAt[ids[i]] = v.UpdatedAt
				took = append(took, v.UpdatedAt.Sub(v.CreatedAt))
				return
			}
			still = append(still, i)
		})
		open = still
		if len(open) == 0 || time.Now().After(deadline) {
			break
		}
		if time.Since(lastLog) >= 5*time.Second {
			logf("settling: %d of %d runs done, %s left", len(ids)-len(open), len(ids), time.Until(deadline).Round(time.Second))
			lastLog = time.Now()
		}
		sleep(ctx, pollEvery)
	}
	return doneAt, took
}

// parallel calls f for every item, httpParallelism at a time.
func parallel(ctx context.Context, items []int, f func(int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(httpParallelism, len(items)) {
		wg.Go(func() {
			for i := range work {
				f(i)
			}
		})
	}
	for _, i := range items {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
}

// judgement is what the oracle found about one run.
type judgement struct {
	member
	ref           *reference // nil when the reference family has no such run
	view          runView
	verdict       verdict
	state         *stuckState // when not done
	retriedSteps  int
	reexecuted    int
	doubleStarted int             // its own run.created or run.started logged twice, or a call of it that started two children
	timed         bool            // its pause is measured: its script waits for no child
	pause         pause           // the longest wait its script does not explain, when done and timed
	handovers     []time.Duration // of its lost claims, from the stopped worker's exit to the next claim
}

// judgeAll reads every member from the gateway (and, for a stuck one, its
// state from Redis) and judges it against its reference.
// A run not seen done within the settle time (in doneAt) is stuck, also
// when it has ended since (late). The longest pause of each done run is
// measured with the workers' stop windows (see longestPause).
func judgeAll(ctx context.Context, st *stack, rdb *redis.Client, refs *references, members []member, doneAt map[string]time.Time, stops []stopWindow) ([]*judgement, error) {
	partitions, err := partitionCount(st.brokers, topicPrefix+"run-steps")
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var errs []error
	out := make([]*judgement, 0, len(members))
	idx := make([]int, len(members))
	for i := range idx {
		idx[i] = i
	}
	parallel(ctx, idx, func(i int) {
		j := &judgement{member: members[i], ref: refs.byID[members[i].refID()]}
		var msgs []byte
		err := retry(ctx, 30*time.Second, 250*time.Millisecond, func() (err error) {
			if j.view, err = st.gw.run(ctx, j.id); err != nil {
				return err
			}
			msgs, err = st.gw.messages(ctx, j.id)
			return err
		})
		var evs []event
		complete := false
		if err == nil {
			err = retry(ctx, 30*time.Second, 250*time.Millisecond, func() (err error) {
				evs, complete, err = st.gw.events(ctx, j.id)
				return err
			})
		}
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("read run %s: %w", j.id, err))
			mu.Unlock()
			return
		}
		if j.ref != nil {
			j.verdict = judge(j.ref, j.view, msgs, evs, complete, j.root)
			j.timed = j.ref.script.countFrom(0, childTool) == 0 && j.kind != memberBatch // a batch run waits for its batches
		} else {
			j.verdict = verdict{done: j.view.Status == "done", wrong: []string{"no reference: the undisturbed run " + j.refID() + " does not exist"}}
		}
		if j.verdict.done && j.timed {
			j.pause, j.handovers = longestPause(evs, workOf(j.ref.script, j.view), stops)
		}
		if _, inTime := doneAt[j.id]; !inTime {
			s := diagnose(ctx, rdb, j.view, evs, partitions)
			s.Late = j.verdict.done
			j.state = &s
			j.verdict.done = false
		}
		if counts := commitCounts(evs); j.kind != memberRun && j.kind != memberBatch && (counts[evRunCreated] > 1 || counts[evRunStarted] > 1) {
			j.doubleStarted++
		}
		j.retriedSteps, j.reexecuted = claimCounts(evs)
		mu.Lock()
		out = append(out, j)
		mu.Unlock()
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return out, errors.Join(errs...)
}

// tally fills the report's run figures from the judgements.
func tally(rep *Report, js []*judgement) {
	rep.StuckStates, rep.StuckPartitions = map[string]int{}, map[string]int{}
	rep.WrongReasons, rep.DoubleReasons = map[string]int{}, map[string]int{}
	sort.Slice(js, func(a, b int) bool { return js[a].id < js[b].id })
	for _, j := range js {
		switch j.kind {
		case memberChild:
			rep.Children++
		case memberFork:
			rep.Forks++
		case memberTick:
			rep.TickRuns++
		case memberBatch:
			rep.BatchRuns++
			for _, d := range j.verdict.doubles {
				if _, key, _ := strings.Cut(d, " × "); strings.HasPrefix(key, evAssistant+" ") {
					rep.BatchAnswersTwice++
				}
			}
		}
		if j.doubleStarted > 0 {
			rep.DoubleStarted += j.doubleStarted
			rep.addSample(Sample{RunID: j.id, Kind: "double_started", Details: j.verdict.doubles})
		}
		rep.RetriedSteps += j.retriedSteps
		rep.ReexecutedCalls += j.reexecuted
		if j.verdict.done {
			rep.Done++
			rep.Terminations[j.view.Termination.String()]++
		} else {
			rep.Stuck++
			rep.StuckStates[j.state.key()]++
			rep.StuckPartitions[strconv.Itoa(j.state.Partition)]++
			rep.StuckRuns = append(rep.StuckRuns, j.id)
			rep.addSample(Sample{RunID: j.id, Kind: "stuck", State: j.state})
		}
		if w := j.verdict.wrong; len(w) > 0 {
			rep.Wrong++
			for _, reason := range w {
				rep.WrongReasons[category(reason)]++
			}
			rep.addSample(Sample{RunID: j.id, Kind: "wrong", Details: w})
		}
		if d := j.verdict.doubles; len(d) > 0 {
			rep.DoubleCommits++
			for _, x := range d {
				_, key, _ := strings.Cut(x, " × ")
				t, _, _ := strings.Cut(key, " ")
				rep.DoubleReasons[t]++
			}
			rep.addSample(Sample{RunID: j.id, Kind: "double_commit", Details: d, State: j.state})
		}
	}
}
