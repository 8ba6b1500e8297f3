package kafkacluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kill kills node id with SIGKILL, as a crashed machine stops, and waits
// until its process is gone. Killing a stopped node does nothing.
func (c *Cluster) Kill(id int) error {
	i, err := c.node(id)
	if err != nil {
		return err
	}
	return c.stop(i, 0)
}

// Stop stops node id cleanly (SIGTERM: the broker hands its partitions'
// leadership to others before it exits), killing it after a minute.
func (c *Cluster) Stop(id int) error {
	i, err := c.node(id)
	if err != nil {
		return err
	}
	return c.stop(i, time.Minute)
}

// Start starts node id again on its ports and data and waits until it is
// back in the cluster's metadata (at most two minutes, or ctx). Starting a
// running node does nothing.
func (c *Cluster) Start(ctx context.Context, id int) error {
	i, err := c.node(id)
	if err != nil {
		return err
	}
	if alive(c.Nodes[i].PID) {
		return nil
	}
	if err := c.spawn(i); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return c.waitBrokers(wctx, []int{id})
}

func (c *Cluster) nodeDir(n Node) string {
	return filepath.Join(c.Dir, "node-"+strconv.Itoa(n.ID))
}

// properties is node n's server.properties: a combined broker and
// controller of a static quorum, every listener on loopback. The internal
// topics are replicated like stepwise's own (min(3, nodes)), and a new
// group's first rebalance is not delayed (tests join groups often; the
// broker's 3 s default only waits for more members).
func (c *Cluster) properties(n Node) string {
	voters := make([]string, len(c.Nodes))
	for i, v := range c.Nodes {
		voters[i] = fmt.Sprintf("%d@127.0.0.1:%d", v.ID, v.ControllerPort)
	}
	rf := min(3, len(c.Nodes))
	lines := []string{
		"process.roles=broker,controller",
		"node.id=" + strconv.Itoa(n.ID),
		"controller.quorum.voters=" + strings.Join(voters, ","),
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.Port, n.ControllerPort),
		fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", n.Port),
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs=" + filepath.Join(c.nodeDir(n), "data"),
		"auto.create.topics.enable=false",
		"offsets.topic.replication.factor=" + strconv.Itoa(rf),
		"offsets.topic.num.partitions=10",
		"transaction.state.log.replication.factor=" + strconv.Itoa(rf),
		"transaction.state.log.min.isr=" + strconv.Itoa(min(2, rf)),
		"share.coordinator.state.topic.replication.factor=" + strconv.Itoa(rf),
		"share.coordinator.state.topic.min.isr=" + strconv.Itoa(min(2, rf)),
		"group.initial.rebalance.delay.ms=0",
		"num.network.threads=2",
		"num.io.threads=4",
		"num.recovery.threads.per.data.dir=1",
		"log.cleaner.threads=1",
		"background.threads=4",
	}
	return strings.Join(lines, "\n") + "\n"
}

// log4j2 writes the broker's log lines to standard output, which spawn
// sends to the node's server.log.
const log4j2 = `status = error
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
`

// format writes node n's configuration and formats its KRaft storage with
// the cluster's id.
func (c *Cluster) format(ctx context.Context, n Node) error {
	dir := c.nodeDir(n)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("kafka node %d: %w", n.ID, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.properties"), []byte(c.properties(n)), 0o644); err != nil {
		return fmt.Errorf("kafka node %d: %w", n.ID, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "log4j2.properties"), []byte(log4j2), 0o644); err != nil {
		return fmt.Errorf("kafka node %d: %w", n.ID, err)
	}
	cmd := exec.CommandContext(ctx, "java", c.javaArgs(n, "-Xmx128m", "kafka.tools.StorageTool",
		"format", "--cluster-id", c.ClusterID, "--config", filepath.Join(dir, "server.properties"))...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kafka node %d: format storage: %w: %s", n.ID, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *Cluster) javaArgs(n Node, heap, main string, args ...string) []string {
	return append([]string{
		heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k",
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(c.nodeDir(n), "log4j2.properties"),
		"-cp", classpath(c.Libs), main,
	}, args...)
}

// spawn starts node i's process in a session of its own (it outlives the
// program that started it) with its output appended to its server.log,
// and records its process id.
func (c *Cluster) spawn(i int) error {
	n := c.Nodes[i]
	dir := c.nodeDir(n)
	logf, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("kafka node %d: %w", n.ID, err)
	}
	defer logf.Close()
	cmd := exec.Command("java", c.javaArgs(n, "-Xmx"+c.Heap, "kafka.Kafka", filepath.Join(dir, "server.properties"))...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("kafka node %d: start java: %w", n.ID, err)
	}
	go cmd.Wait() // reaps the process when it exits while this program runs
	c.Nodes[i].PID = cmd.Process.Pid
	fmt.Fprintf(c.log, "kafka node %d: started, pid %d, %s\n", n.ID, cmd.Process.Pid, n.Addr())
	return c.save()
}

// stop signals node i (SIGTERM, or SIGKILL when grace is 0; SIGKILL
// after grace) and waits until its process is gone.
func (c *Cluster) stop(i int, grace time.Duration) error {
	n := c.Nodes[i]
	if !alive(n.PID) {
		c.Nodes[i].PID = 0
		return c.save()
	}
	sig := syscall.SIGKILL
	if grace > 0 {
		sig = syscall.SIGTERM
	}
	if err := syscall.Kill(n.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kafka node %d: signal pid %d: %w", n.ID, n.PID, err)
	}
	deadline := time.Now().Add(grace)
	for alive(n.PID) {
		if sig != syscall.SIGKILL && time.Now().After(deadline) {
			sig = syscall.SIGKILL
			syscall.Kill(n.PID, sig)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintf(c.log, "kafka node %d: stopped (%s)\n", n.ID, sig)
	c.Nodes[i].PID = 0
	return c.save()
}

// alive tells whether pid is a running (not zombie) Kafka node: the
// command line is checked so that a reused pid is not taken for a node.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "kafka.Kafka") {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	s := string(stat)
	if j := strings.LastIndexByte(s, ')'); j >= 0 && j+2 < len(s) {
		return s[j+2] != 'Z'
	}
	return true
}
