package deadletter_test

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-run/stepwise/internal/deadletter"
)

// docsLine is the first line of docs/topics.md that starts with prefix.
func docsLine(t *testing.T, prefix string) string {
	t.Helper()
	f, err := os.Open("../../docs/topics.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			return sc.Text()
		}
	}
	t.Fatalf("docs/topics.md has no line starting %q", prefix)
	return ""
}

// On a broker with Kafka's defaults (retention.ms and segment.ms of 7
// days each) a re-drive mark lasts 14 days (ADR 0008); the example in
// docs/topics.md says what redrive prints there.
func TestReport_text_on_default_retention_is_what_the_docs_show(t *testing.T) {
	const week = 7 * 24 * time.Hour
	rep := deadletter.Report{MarkTTL: week + week, Redriven: []deadletter.Record{{Topic: "stepwise.decisions", Key: "r-poison"}}}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	got, _, _ := strings.Cut(text.String(), "\n")
	if want := docsLine(t, "re-drove 1 records (remembered"); got != want {
		t.Errorf("redrive prints\n%s\nthe docs show\n%s", got, want)
	}
}
