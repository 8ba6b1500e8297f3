package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/IBM/sarama"
)

// deadLetterReasonHeader is the header in which a dead-lettered record
// carries its handler's error (Watermill's poison-queue key).
const deadLetterReasonHeader = "reason_poisoned"

// record is one record read back from a topic.
type record struct {
	tp      topicPartition
	offset  int64
	key     []byte
	value   []byte
	headers map[string]string
}

// readTopic returns every record of topic, from the oldest to the end as
// it stands when called.
func readTopic(brokers []string, topic string) ([]record, error) {
	client, err := sarama.NewClient(brokers, saramaConfig())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	defer consumer.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", topic, err)
	}
	var out []record
	for _, p := range parts {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return nil, fmt.Errorf("read %s/%d: end offset: %w", topic, p, err)
		}
		start, err := client.GetOffset(topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, fmt.Errorf("read %s/%d: start offset: %w", topic, p, err)
		}
		if start >= end {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, start)
		if err != nil {
			return nil, fmt.Errorf("read %s/%d: %w", topic, p, err)
		}
		for done := false; !done; {
			select {
			case m := <-pc.Messages():
				r := record{tp: topicPartition{topic, p}, offset: m.Offset, key: m.Key, value: m.Value, headers: map[string]string{}}
				for _, h := range m.Headers {
					r.headers[string(h.Key)] = string(h.Value)
				}
				out = append(out, r)
				done = m.Offset >= end-1
			case <-time.After(30 * time.Second):
				pc.Close()
				return nil, fmt.Errorf("read %s/%d: no record for 30s before offset %d", topic, p, end)
			}
		}
		pc.Close()
	}
	return out, nil
}

// runResult is what the oracle reads of a RunResult record.
type runResult struct {
	RunID       string       `json:"run_id"`
	Status      string       `json:"status"`
	Step        int          `json:"step"`
	Termination *termination `json:"termination"`
}

// resultSet is what run-results holds for one run: how many records, and
// the distinct values (canonical JSON) in topic order.
type resultSet struct {
	records  int
	distinct [][]byte
}

// groupResults groups run-results records by run id, leaving out the
// duplicator's copies (isCopy may be nil).
func groupResults(records []record, isCopy func(topicPartition, int64) bool) (map[string]*resultSet, error) {
	out := map[string]*resultSet{}
	for _, r := range records {
		if isCopy != nil && isCopy(r.tp, r.offset) {
			continue
		}
		var rr runResult
		if err := json.Unmarshal(r.value, &rr); err != nil {
			return nil, fmt.Errorf("run-results %s/%d@%d: %w", r.tp.topic, r.tp.partition, r.offset, err)
		}
		canon, err := canonicalJSON(r.value)
		if err != nil {
			return nil, err
		}
		s := out[rr.RunID]
		if s == nil {
			s = &resultSet{}
			out[rr.RunID] = s
		}
		s.records++
		known := false
		for _, d := range s.distinct {
			if bytes.Equal(d, canon) {
				known = true
				break
			}
		}
		if !known {
			s.distinct = append(s.distinct, canon)
		}
	}
	return out, nil
}

// canonicalJSON re-encodes a JSON document with its object keys sorted.
func canonicalJSON(b []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical JSON of %.200s: %w", b, err)
	}
	return json.Marshal(v)
}

// checkResults reads run-results and checks that every done run has a
// RunResult, that all of a run's RunResults are equal, and that they say
// what the run says; a run that fails one of these is wrong. It waits up
// to resultsWait for results still on their way.
func checkResults(ctx context.Context, brokers []string, js []*judgement, rep *Report, isCopy func(topicPartition, int64) bool) error {
	var groups map[string]*resultSet
	deadline := time.Now().Add(resultsWait)
	for {
		recs, err := readTopic(brokers, topicPrefix+"run-results")
		if err != nil {
			return err
		}
		if groups, err = groupResults(recs, isCopy); err != nil {
			return err
		}
		missing := 0
		for _, j := range js {
			if j.verdict.done && groups[j.id] == nil {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		sleep(ctx, time.Second)
	}
	for _, j := range js {
		s := groups[j.id]
		if !j.verdict.done {
			continue
		}
		if s == nil {
			rep.MissingResults++
			j.verdict.wrong = append(j.verdict.wrong, "run result: none on "+topicPrefix+"run-results")
			continue
		}
		if s.records > 1 {
			rep.MultiResultRuns++
		}
		if len(s.distinct) > 1 {
			rep.DifferingResults++
			j.verdict.wrong = append(j.verdict.wrong, fmt.Sprintf("run result: %d different RunResults: %s", len(s.distinct), bytes.Join(s.distinct, []byte(" | "))))
		}
		var rr runResult
		if err := json.Unmarshal(s.distinct[0], &rr); err != nil {
			return err
		}
		if rr.Status != j.view.Status || rr.Step != j.view.Step || rr.Termination.String() != j.view.Termination.String() {
			j.verdict.wrong = append(j.verdict.wrong, fmt.Sprintf("run result: says %s at step %d, the run %s at step %d", rr.Termination, rr.Step, j.view.Termination, j.view.Step))
		}
	}
	return nil
}

// runIDPattern matches the harness's run ids inside dead-letter reasons.
var runIDPattern = regexp.MustCompile(`chaos-[0-9a-f]+-(ref)?[0-9]+`)

// countDeadLetters reads the dead-letter topic into the report, with the
// reasons (run ids left out) as a histogram.
func countDeadLetters(brokers []string, rep *Report) error {
	recs, err := readTopic(brokers, topicPrefix+"dead-letter")
	if err != nil {
		return err
	}
	rep.DeadLetters = len(recs)
	rep.DeadLetterReasons = map[string]int{}
	for _, r := range recs {
		reason := runIDPattern.ReplaceAllString(r.headers[deadLetterReasonHeader], runPlaceholder)
		if len(reason) > 160 {
			reason = reason[:160] + "…"
		}
		if reason == "" {
			reason = "(no reason header)"
		}
		rep.DeadLetterReasons[reason]++
	}
	return nil
}

// partitionCount returns how many partitions topic has.
func partitionCount(brokers []string, topic string) (int, error) {
	client, err := sarama.NewClient(brokers, saramaConfig())
	if err != nil {
		return 0, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		return 0, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	return len(parts), nil
}
