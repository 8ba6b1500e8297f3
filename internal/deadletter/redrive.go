package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/stepwise-run/stepwise/internal/kafka"
)

// SkipReason says why a redrive left a record alone.
type SkipReason string

// Why a redrive skips a record.
const (
	SkipOtherTopic SkipReason = "filtered out: from another topic"
	SkipTooOld     SkipReason = "filtered out: dead-lettered before since"
	SkipNoTopic    SkipReason = "no " + kafka.MetadataDeadLetterTopic + " header: original topic unknown"
	SkipRedriven   SkipReason = "already re-driven"
	SkipClaimed    SkipReason = "claimed by another redrive"
)

// Skip is a record a redrive left alone, and why.
type Skip struct {
	Record Record     `json:"record"`
	Why    SkipReason `json:"why"`
}

// Report is what a redrive did.
type Report struct {
	// DryRun is set when nothing was published or recorded: Redriven then
	// lists what would have been re-driven.
	DryRun bool `json:"dry_run"`
	// Redriven lists the records re-published to their original topics,
	// in topic order.
	Redriven []Record `json:"redriven"`
	// Skipped lists the records left alone, in topic order.
	Skipped []Skip `json:"skipped"`
	// MarkTTL is how long Redis remembers that a record was re-driven:
	// as long as the brokers may keep it (kafka.RecordLifetime). 0 means
	// for good (unlimited retention), or a dry run.
	MarkTTL time.Duration `json:"mark_ttl"`
}

// Redrive publishes the records of the dead-letter topic that f keeps back
// to the topics they were consumed from, each once: a record is claimed in
// Redis before it is published and marked re-driven after, so running
// Redrive again, or twice at once, publishes nothing twice. A re-driven
// message that fails again is dead-lettered again by its consumer, as a new
// record that a later Redrive picks up.
//
// Delivery is at least once: a redrive that dies between its publish and
// its mark leaves a claim that expires after the claim timeout, and the
// next redrive publishes the record again (stepwise's consumers treat the
// duplicate as a no-op). With dryRun, nothing is claimed, published or
// marked.
//
// It stops at the first error — Kafka or Redis unreachable, a publish
// that fails — and returns it with the report so far. A cancelled ctx
// stops it between records.
func (q *Queue) Redrive(ctx context.Context, f Filter, dryRun bool) (Report, error) {
	rep := Report{DryRun: dryRun}
	if err := f.Validate(); err != nil {
		return rep, err
	}
	recs, err := q.read(ctx)
	if err != nil {
		return rep, err
	}
	if !dryRun {
		if rep.MarkTTL, err = q.markTTL(ctx); err != nil {
			return rep, err
		}
	}
	now := q.now()
	for _, r := range recs {
		if err := context.Cause(ctx); err != nil {
			return rep, err
		}
		if why := q.skip(r, f, now); why != "" {
			rep.Skipped = append(rep.Skipped, Skip{Record: r, Why: why})
			continue
		}
		if dryRun {
			rep.Redriven = append(rep.Redriven, r)
			continue
		}
		at := q.now()
		done, err := q.redrive(ctx, r, at, rep.MarkTTL)
		if err != nil {
			return rep, err
		}
		if !done {
			rep.Skipped = append(rep.Skipped, Skip{Record: r, Why: SkipClaimed})
			continue
		}
		r.State, r.RedrivenAt = StateRedriven, at
		rep.Redriven = append(rep.Redriven, r)
	}
	return rep, nil
}

// skip reports why a redrive leaves r alone, or "".
func (q *Queue) skip(r Record, f Filter, now time.Time) SkipReason {
	if why := f.skip(r, q.names, now); why != "" {
		return why
	}
	switch {
	case r.Topic == "":
		return SkipNoTopic
	case r.State == StateRedriven:
		return SkipRedriven
	case r.State == StateClaimed:
		return SkipClaimed
	}
	return ""
}

// redrive claims, publishes and marks one record as re-driven at at; false
// means another redrive claimed it first.
func (q *Queue) redrive(ctx context.Context, r Record, at time.Time, ttl time.Duration) (bool, error) {
	ok, err := q.marks.claim(ctx, r, q.claimTimeout)
	if err != nil || !ok {
		return false, err
	}
	if err := q.pub.Publish(r.Topic, r.redriven(q.names.DeadLetter())); err != nil {
		return false, fmt.Errorf("re-publish %s to %s: %w (its claim expires in %s; a later redrive retries it)", r.ID(), r.Topic, err, q.claimTimeout)
	}
	if err := q.marks.confirm(ctx, r, at, ttl); err != nil {
		return false, fmt.Errorf("%s was re-published to %s, but: %w (its claim expires in %s; a later redrive publishes it again)", r.ID(), r.Topic, err, q.claimTimeout)
	}
	return true, nil
}

// markTTL is how long a re-drive mark must last: as long as the brokers
// may keep the dead-letter record it stands for; 0 (for good) when they
// keep records without limit.
func (q *Queue) markTTL(ctx context.Context) (time.Duration, error) {
	lifetime, unlimited, err := kafka.RecordLifetime(ctx, q.kafka, q.names.DeadLetter())
	if err != nil {
		return 0, fmt.Errorf("how long to remember re-drives: %w", err)
	}
	if unlimited {
		return 0, nil
	}
	return lifetime, nil
}
