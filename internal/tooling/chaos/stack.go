package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/internal/tooling/kafkacluster"
)

// The programs the harness runs workers of.
const (
	programStepWorker = "stepworker"
	programToolWorker = "toolworker"
)

// topicPrefix is the topic prefix of the programs' configuration (the
// default: the harness's configuration names none).
const topicPrefix = "stepwise."

// stack is stepwise as the harness runs it, every part an OS process: the
// embedded Kafka-protocol broker of `stepwise infra` (its embedded Redis is
// started too, and left unused) or a real Apache Kafka cluster, a private
// redis-server with an AOF, one gateway, and the step and tool workers.
type stack struct {
	dir         string
	configPath  string
	broker      *process              // the embedded broker; nil on a real cluster
	cluster     *kafkacluster.Cluster // the real cluster; nil on the embedded broker
	brokers     []string
	redis       *redisServer
	gatewayProc *process
	gw          *gateway
	stepWorkers []*process
	toolWorkers []*process
	logf        func(string, ...any)
}

// configYAML is the programs' configuration: the worker settings and the
// agent whose runs bring their own scripts, with the tools echo, sleep and
// the child agent's tool, the agent it may hand a run to (composeYAML),
// and, when batchURL is set, the agent of the batch runs, on the fake
// Batch API there (batchYAML).
func configYAML(workerYAML, batchURL string) string {
	batch := ""
	if batchURL != "" {
		batch = batchYAML(batchURL)
	}
	return strings.TrimRight(workerYAML, "\n") + `
agents:
  ` + agentName + `:
    model: {provider: script, turns: [{text: "This run brought no script."}]}
    tools: [echo, sleep, ` + childTool + `]
    handoffs: [` + handoffAgent + `]` + batch + composeYAML()
}

// startStack starts every process and returns once the gateway is ready;
// batchURL is the fake Batch API's, "" without batch runs. On error, what
// was started is stopped.
func startStack(ctx context.Context, cfg *Config, dir, bin, batchURL string) (_ *stack, err error) {
	s := &stack{dir: dir, logf: cfg.Logf}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if err := mkdir(filepath.Join(dir, "logs")); err != nil {
		return nil, err
	}
	s.configPath = filepath.Join(dir, "stepwise.yaml")
	if err := os.WriteFile(s.configPath, []byte(configYAML(cfg.WorkerYAML, batchURL)), 0o644); err != nil {
		return nil, fmt.Errorf("write the configuration: %w", err)
	}

	if cfg.Kafka == KafkaReal {
		err = s.startCluster(ctx)
	} else {
		err = s.startBroker(ctx, bin)
	}
	if err != nil {
		return nil, err
	}
	if s.redis, err = newRedisServer(dir, cfg.Logf); err != nil {
		return nil, err
	}
	if err := s.redis.start(ctx); err != nil {
		return nil, err
	}
	env := []string{
		"STEPWISE_KAFKA_BROKERS=" + strings.Join(s.brokers, ","),
		"STEPWISE_REDIS_URL=" + s.redis.URL(),
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	httpAddr := "127.0.0.1:" + strconv.Itoa(port)
	s.gatewayProc = s.program(bin, "gateway", "gateway", env, "--config", s.configPath, "--http", httpAddr)
	// The gateway first: the first program creates the topics.
	if err := s.gatewayProc.start(); err != nil {
		return nil, err
	}
	s.gw = newGateway("http://" + httpAddr)
	if err := retry(ctx, 60*time.Second, 100*time.Millisecond, func() error { return s.gw.ready(ctx) }); err != nil {
		return nil, fmt.Errorf("the gateway did not get ready (log: %s): %w", s.gatewayProc.logPath, err)
	}
	for i := range cfg.StepWorkers {
		p := s.program(bin, programStepWorker, fmt.Sprintf("stepworker-%d", i+1), env, "--config", s.configPath)
		s.stepWorkers = append(s.stepWorkers, p)
	}
	for i := range cfg.ToolWorkers {
		p := s.program(bin, programToolWorker, fmt.Sprintf("toolworker-%d", i+1), env, "--config", s.configPath)
		s.toolWorkers = append(s.toolWorkers, p)
	}
	for _, p := range s.workers() {
		if err := p.start(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// program returns a supervised process of one of the stepwise programs,
// whose API key of the fake Batch API is its name (batchAPI.holder).
func (s *stack) program(bin, program, name string, env []string, args ...string) *process {
	return &process{
		name: name, program: program, path: filepath.Join(bin, program), args: args, env: append(slices.Clip(env), batchKeyEnv+"="+name),
		logPath: filepath.Join(s.dir, "logs", name+".log"), supervise: true, logf: s.logf,
	}
}

// startBroker starts `stepwise infra` on free ports and reads the broker's
// address from its log ("stepwise infra: kafka=ADDR redis=URL").
func (s *stack) startBroker(ctx context.Context, bin string) error {
	logPath := filepath.Join(s.dir, "logs", "broker.log")
	s.broker = &process{
		name: "broker", path: filepath.Join(bin, "stepwise"),
		args:    []string{"infra", "--kafka", "127.0.0.1:0", "--redis", "127.0.0.1:0"},
		logPath: logPath, logf: s.logf,
	}
	if err := s.broker.start(); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if a := brokerAddr(logPath); a != "" {
			s.brokers = []string{a}
			return nil
		}
		select {
		case <-s.broker.exited():
			return fmt.Errorf("the broker exited at start (log: %s)", logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the broker did not name its address within 30s (log: %s)", logPath)
		}
	}
}

// brokerAddr returns the address in the line `stepwise infra` prints, or ""
// while there is none.
func brokerAddr(logPath string) string {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "stepwise infra:") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if a, ok := strings.CutPrefix(f, "kafka="); ok {
				return a
			}
		}
	}
	return ""
}

// workers returns the step and tool workers: the processes the churn kills.
func (s *stack) workers() []*process {
	return append(append([]*process(nil), s.stepWorkers...), s.toolWorkers...)
}

// crashes returns how many times any process exited without being killed,
// and which.
func (s *stack) crashes() (n int, which []string) {
	all := append(s.workers(), s.gatewayProc, s.broker)
	if s.redis != nil {
		all = append(all, s.redis.proc)
	}
	for _, p := range all {
		if p == nil {
			continue
		}
		if _, c := p.counts(); c > 0 {
			n += c
			which = append(which, fmt.Sprintf("%s ×%d (last: %s)", p.name, c, p.lastExitText()))
		}
	}
	return n, which
}

// dumpGoroutines sends SIGQUIT to every worker and the gateway, which
// makes a Go program write the stacks of all its goroutines to its log and
// exit, and waits a little for them: where a stuck run's worker is
// blocked. The processes are not restarted.
func (s *stack) dumpGoroutines() {
	procs := append(s.workers(), s.gatewayProc)
	for _, p := range procs {
		p.quit()
	}
	deadline := time.After(5 * time.Second)
	for _, p := range procs {
		select {
		case <-p.exited():
		case <-deadline:
			return
		}
	}
}

// close kills every process: workers first, the broker last.
func (s *stack) close() {
	for _, p := range s.workers() {
		p.close()
	}
	if s.gatewayProc != nil {
		s.gatewayProc.close()
	}
	if s.redis != nil {
		s.redis.proc.close()
	}
	if s.broker != nil {
		s.broker.close()
	}
	if s.cluster != nil {
		if err := s.cluster.Down(); err != nil {
			s.logf("take the Kafka cluster down: %v", err)
		}
	}
}

// errBrokerGone is the cause of a harness stopped because the broker died:
// its topics lived in its memory, so nothing can go on.
var errBrokerGone = errors.New("the broker (stepwise infra) exited; its topics were in memory, so the chaos run cannot go on")
