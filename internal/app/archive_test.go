package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/stepwise-run/stepwise/internal/app"
	"github.com/stepwise-run/stepwise/internal/cli"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/internal/tooling/testinfra"
	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/topics"
)

// archivedRuns reads the run-archive topic from its start with a Kafka
// consumer: the records of each run id, in order, checking that each is
// keyed by its run.
func archivedRuns(t *testing.T, in infra, stack *app.Stack) map[string][]topics.RunArchived {
	t.Helper()
	out := map[string][]topics.RunArchived{}
	err := kafka.ReadTopic(context.Background(), kafka.Plain(in.brokers...), stack.Names.RunArchive(), func(m *sarama.ConsumerMessage) error {
		rec, err := topics.Decode[topics.RunArchived](m.Value)
		if err != nil {
			return err
		}
		if string(m.Key) != rec.RunID {
			t.Errorf("a record of run %s keyed %q", rec.RunID, m.Key)
		}
		out[rec.RunID] = append(out[rec.RunID], rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitDeleted waits until the retention has deleted run id: its GET is a
// 404 and the run index no longer names it (the sweeper's trim).
func waitDeleted(t *testing.T, base string, rdb redis.UniversalClient, id string) {
	t.Helper()
	testinfra.Eventually(t, 30*time.Second, func() bool {
		var body any
		_, err := rdb.ZScore(context.Background(), "sw:runs", id).Result()
		return httpGet(t, base+"/v1/runs/"+id, &body) == http.StatusNotFound && errors.Is(err, redis.Nil)
	}, func() string { return "run " + id + " is still kept" })
}

// assertArchived checks that rec is the full record of run id, ended
// naturally at step 2 after threeSteps: the run, its conversation and its
// event log to run.finished.
func assertArchived(t *testing.T, rec topics.RunArchived, id string) {
	t.Helper()
	var run runView
	if err := json.Unmarshal(rec.Run, &run); err != nil {
		t.Fatal(err)
	}
	assertNaturalEnd(t, run, 2)
	if run.RunID != id || len(run.ToolCalls) != 4 {
		t.Errorf("archived run %s with %d calls, want %s with 4", run.RunID, len(run.ToolCalls), id)
	}
	assertHistory(t, rec.Messages, threeStepsHistory())
	if n := len(rec.Events); n == 0 || rec.Events[0].Type != pipeline.EventRunCreated || rec.Events[n-1].Type != pipeline.EventRunFinished {
		t.Errorf("archived events %+v, want run.created to run.finished", rec.Events)
	}
}

func TestArchive_to_the_topic_a_run_outlives_its_retention_there(t *testing.T) {
	in := infra{brokers: testinfra.Kafka(t), redisURL: testinfra.RedisServer(t)}
	stack := connect(t, in, parseConfig(t, testConfig+"runs: {retention: 1s, archive: {to: topic}}\n"))
	workers(t, stack)
	base := serve(t, stack)

	id := createRun(t, base, "arch-"+uuid.NewString(), "assistant", threeSteps)
	waitDone(t, base, id, 30*time.Second)
	waitDeleted(t, base, stack.Redis, id)

	recs := archivedRuns(t, in, stack)[id]
	if len(recs) != 1 {
		t.Fatalf("run-archive holds %d records of run %s, want 1", len(recs), id)
	}
	assertArchived(t, recs[0], id)
	assertCompacted(t, in, stack.Names.RunArchive())
	t.Run("kcat_reads_it_too", func(t *testing.T) {
		kcat, err := exec.LookPath("kcat")
		if err != nil {
			t.Skip("no kcat on PATH")
		}
		// -J: one JSON envelope a record, with its key and its value as a string.
		out, err := exec.Command(kcat, "-b", strings.Join(in.brokers, ","), "-C", "-t", stack.Names.RunArchive(), "-o", "beginning", "-e", "-q", "-J").Output()
		if err != nil {
			t.Fatalf("kcat: %v", err)
		}
		var env struct {
			Key     string `json:"key"`
			Payload string `json:"payload"`
		}
		if err := json.Unmarshal(out, &env); err != nil {
			t.Fatalf("kcat printed %q: %v", out, err)
		}
		rec, err := topics.Decode[topics.RunArchived]([]byte(env.Payload))
		if err != nil || env.Key != id {
			t.Fatalf("kcat read key %q, %v; want %s", env.Key, err, id)
		}
		assertArchived(t, rec, id)
	})
}

// assertCompacted checks that topic keeps the last record of each key.
func assertCompacted(t *testing.T, in infra, topic string) {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(in.brokers, kafka.SaramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"cleanup.policy"}})
	if err != nil || len(entries) != 1 || entries[0].Value != "compact" {
		t.Errorf("cleanup.policy of %s: %v %+v, want compact", topic, err, entries)
	}
}

func TestArchive_to_files_a_run_outlives_its_retention_in_a_file(t *testing.T) {
	dir := t.TempDir()
	in := infra{brokers: testinfra.Kafka(t), redisURL: testinfra.RedisServer(t)}
	stack := connect(t, in, parseConfig(t, testConfig+"runs: {retention: 1s, archive: {to: files, dir: "+dir+"}}\n"))
	workers(t, stack)
	base := serve(t, stack)

	id := createRun(t, base, "arch-"+uuid.NewString(), "assistant", threeSteps)
	waitDone(t, base, id, 30*time.Second)
	waitDeleted(t, base, stack.Redis, id)

	recs := archivedLines(t, dir)[id]
	if len(recs) != 1 {
		t.Fatalf("the files hold %d records of run %s, want 1", len(recs), id)
	}
	assertArchived(t, recs[0], id)
}

// archivedLines reads the archive files of dir: the records of each run
// id, in order.
func archivedLines(t *testing.T, dir string) map[string][]topics.RunArchived {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "runs-*.jsonl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no archive file in %s: %v", dir, err)
	}
	out := map[string][]topics.RunArchived{}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			rec, err := topics.Decode[topics.RunArchived](sc.Bytes())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out[rec.RunID] = append(out[rec.RunID], rec)
		}
		_ = f.Close()
	}
	return out
}

// failRetention is a Redis hook that fails the first command pipeline
// starting the retention of run (the PEXPIREs of store.Archived), as a
// worker dying between the archive and its run's deletion would leave it.
type failRetention struct {
	run    string
	failed atomic.Bool
}

func (f *failRetention) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failRetention) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (f *failRetention) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "pexpire" && strings.Contains(c.Args()[1].(string), "{"+f.run+"}") && f.failed.CompareAndSwap(false, true) {
				err := errors.New("injected: the worker died between the archive and the run's deletion")
				for _, c := range cmds {
					c.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

func TestArchive_a_fault_between_the_archive_and_the_deletion_archives_again_and_deletes(t *testing.T) {
	in := infra{brokers: testinfra.Kafka(t), redisURL: testinfra.RedisServer(t)}
	stack := connect(t, in, parseConfig(t, testConfig+"runs: {retention: 1s, archive: {to: topic}}\n"))
	id := "arch-" + uuid.NewString()
	fault := &failRetention{run: id}
	stack.Redis.AddHook(fault)
	workers(t, stack)
	base := serve(t, stack)

	createRun(t, base, id, "assistant", threeSteps)
	waitDone(t, base, id, 30*time.Second)
	waitDeleted(t, base, stack.Redis, id)

	if !fault.failed.Load() {
		t.Fatal("the fault was never injected")
	}
	recs := archivedRuns(t, in, stack)[id]
	if len(recs) < 2 {
		t.Fatalf("run-archive holds %d records of run %s, want it archived again after the fault", len(recs), id)
	}
	assertArchived(t, recs[len(recs)-1], id)
}

// stepwise runs export writes the runs a filter selects, each with its
// messages and events, to a file or to stdout; a key without the admin
// scope is refused.
func TestCLI_runs_export_writes_the_selected_runs(t *testing.T) {
	t.Setenv("STEPWISE_TEST_EXPORT_ADMIN", "export-admin-123456")
	t.Setenv("STEPWISE_TEST_EXPORT_READER", "export-reader-123456")
	stack := connect(t, newInfra(t), parseConfig(t, testConfig+`auth: {keys: [
  {name: ops, key_env: STEPWISE_TEST_EXPORT_ADMIN, scopes: [admin]},
  {name: reader, key_env: STEPWISE_TEST_EXPORT_READER, scopes: [runs:read]}]}
`))
	workers(t, stack)
	base := serve(t, stack)
	t.Setenv(cli.EnvGateway, base)
	t.Setenv(cli.EnvAPIKey, "export-admin-123456")

	// Three runs of assistant and one of sequential, submitted and
	// followed to their ends.
	dir := t.TempDir()
	want := map[string]bool{}
	var lines []string
	for i := range 4 {
		id, agent := fmt.Sprintf("exp-%d", i), "assistant"
		if i == 3 {
			agent = "sequential"
		} else {
			want[id] = true
		}
		b, _ := json.Marshal(map[string]any{"run_id": id, "agent": agent, "input": "go", "model": json.RawMessage(threeSteps)})
		lines = append(lines, string(b))
	}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := stepwiseCLI(t, "submit", in, "--follow", "--out", filepath.Join(dir, "results.jsonl")); code != cli.ExitOK {
		t.Fatalf("submit: exit %d: %s", code, errs)
	}

	exports := t.TempDir()
	code, _, errs := stepwiseCLI(t, "runs", "export", "--agent", "assistant", "--status", "done", "--out", filepath.Join(exports, "runs-export.jsonl"))
	if code != cli.ExitOK {
		t.Fatalf("runs export: exit %d: %s", code, errs)
	}
	recs := archivedLines(t, exports)
	if len(recs) != len(want) {
		t.Fatalf("exported %d runs, want the %d of assistant", len(recs), len(want))
	}
	for id := range want {
		if len(recs[id]) != 1 {
			t.Fatalf("run %s exported %d times, want once", id, len(recs[id]))
		}
		assertArchived(t, recs[id][0], id)
	}

	code, stdout, errs := stepwiseCLI(t, "runs", "export", "--agent", "sequential")
	if code != cli.ExitOK || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, `"run_id":"exp-3"`) {
		t.Fatalf("runs export of sequential to stdout: exit %d, %q %s", code, stdout, errs)
	}
	if code, stdout, _ := stepwiseCLI(t, "runs", "export", "--agent", "nobody"); code != cli.ExitOK || stdout != "" {
		t.Fatalf("runs export of an agent with no runs: exit %d, %q", code, stdout)
	}
	t.Setenv(cli.EnvAPIKey, "export-reader-123456")
	if code, _, errs := stepwiseCLI(t, "runs", "export"); code != cli.ExitFail || !strings.Contains(errs, "403") {
		t.Fatalf("runs export with a runs:read key: exit %d: %s", code, errs)
	}
}
