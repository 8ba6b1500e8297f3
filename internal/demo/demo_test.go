package demo_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stepwise-run/stepwise/internal/demo"
)

func TestDemo_a_batch_ends_as_its_scripts_say_and_prints_a_summary(t *testing.T) {
	var out bytes.Buffer
	rep, err := demo.Run(context.Background(), demo.Options{Runs: 30, Out: &out})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if !rep.OK() || rep.Passed != 30 || rep.Steps != 60 || rep.Calls != 48 || rep.Decisions != 12 {
		t.Fatalf("report %+v\n%s", rep, out.String())
	}
	for _, want := range []string{"submitted 30 runs", "finished 30/30", "runs        30 (30 as expected, 0 not)", "throughput"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, out.String())
		}
	}
}
