package deadletter_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stepwise-run/stepwise/internal/deadletter"
	"github.com/stepwise-run/stepwise/internal/kafka"
	"github.com/stepwise-run/stepwise/topics"
)

// BenchmarkList_300_records lists a dead-letter topic of 300 records over
// 3 partitions (what GET /v1/dead-letters reads), on the test broker.
func BenchmarkList_300_records(b *testing.B) {
	e := newEnv(b)
	for i := range 300 {
		m := message.NewMessage(watermill.NewUUID(), []byte(`{"v":1}`))
		m.Metadata.Set(topics.MetadataRunID, fmt.Sprintf("r-%d", i))
		m.Metadata.Set(kafka.MetadataDeadLetterTopic, e.names.Decisions())
		m.Metadata.Set(kafka.MetadataDeadLetterReason, "not found: run")
		if err := e.pub.Publish(e.names.DeadLetter(), m); err != nil {
			b.Fatal(err)
		}
	}
	q := e.queue(b, nil)
	b.ResetTimer()
	for b.Loop() {
		recs, err := q.List(context.Background(), deadletter.Filter{})
		if err != nil || len(recs) != 300 {
			b.Fatalf("List: %d records, %v", len(recs), err)
		}
	}
}
