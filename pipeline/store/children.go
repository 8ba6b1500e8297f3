package store

import (
	"context"
	"fmt"
)

// Child runs: a call of a tool whose executor is an agent starts a child
// run (pipeline.ChildRunID) and parks until the child tells it its answer.
// The parent's hash keeps one field per child, child:<call id>, written
// with the outbox marks (mark_sent): "0" before the child is written, so a
// parent that ends meanwhile finds the child to cancel, "1" once it is,
// so no reconcile writes it again. Run.Children reads them; they go with
// the run's hash. RunStatuses reads the children's statuses.

// MarkChild records on parent run parentID that the child run of its call
// callID is registered (started false) or started (true). A run that is
// gone is not recreated.
func (s *Store) MarkChild(ctx context.Context, parentID, callID string, started bool) error {
	value := "0"
	if started {
		value = "1"
	}
	return s.mark(ctx, s.scripts.markSent, fmt.Sprintf("mark child of call %s of run %s", callID, parentID), parentID,
		outboxMark{Part: "run", Field: childField + callID, Value: value})
}
