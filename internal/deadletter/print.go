package deadletter

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// reasonWidth is how many characters of a reason a table shows: its first
// line, cut to this.
const reasonWidth = 100

// WriteTable writes recs for people, one line a record, with ages counted
// to now:
//
//	RECORD  AGE  TOPIC               KEY  STATE  REASON
//	2/0     3m   stepwise.decisions  r-1  dead   run r-1: not found
func WriteTable(w io.Writer, recs []Record, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RECORD\tAGE\tTOPIC\tKEY\tSTATE\tREASON")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID(), human(now.Sub(r.Time)),
			orDash(r.Topic), orDash(r.Key), r.State, shorten(r.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d dead-letter records\n", len(recs))
	return err
}

// WriteJSON writes recs as one JSON array (reasons and payloads in full).
func WriteJSON(w io.Writer, recs []Record) error {
	if recs == nil {
		recs = []Record{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(recs)
}

// WriteJSON writes the report as one JSON object.
func (rep Report) WriteJSON(w io.Writer) error {
	if rep.Redriven == nil {
		rep.Redriven = []Record{}
	}
	if rep.Skipped == nil {
		rep.Skipped = []Skip{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteText writes the report for people: each record re-driven, the
// count per topic, and the skipped records counted by reason.
func (rep Report) WriteText(w io.Writer) error {
	var b strings.Builder
	switch {
	case rep.DryRun:
		fmt.Fprintf(&b, "dry run, nothing published or recorded: would re-drive %d records\n", len(rep.Redriven))
	case rep.MarkTTL > 0:
		fmt.Fprintf(&b, "re-drove %d records (remembered for %s, the dead-letter topic's retention plus its segment time)\n", len(rep.Redriven), human(rep.MarkTTL))
	default:
		fmt.Fprintf(&b, "re-drove %d records (remembered for good: the dead-letter topic keeps records without limit)\n", len(rep.Redriven))
	}
	perTopic := map[string]int{}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, r := range rep.Redriven {
		perTopic[r.Topic]++
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.ID(), r.Topic, orDash(r.Key))
	}
	writeCounts(tw, "per topic", perTopic)
	skipped := map[string]int{}
	for _, s := range rep.Skipped {
		skipped[string(s.Why)]++
	}
	writeCounts(tw, fmt.Sprintf("skipped %d", len(rep.Skipped)), skipped)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCounts writes a heading and one "name count" line per entry, by name.
func writeCounts(w io.Writer, heading string, counts map[string]int) {
	if len(counts) == 0 {
		return
	}
	fmt.Fprintf(w, "%s:\n", heading)
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(w, "  %s\t%d\n", k, counts[k])
	}
}

// human writes a duration the way an operator reads an age: "45s", "12m",
// "5h3m", "14d".
func human(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	default:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
}

// shorten is the first line of s, cut to reasonWidth characters.
func shorten(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > reasonWidth {
		return string(r[:reasonWidth]) + "…"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
