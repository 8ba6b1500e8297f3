package bench_test

import (
	"bytes"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/stepwise-run/stepwise/internal/tooling/bench"
)

// cpuProfile is a CPU profile of the samples given, each a CPU time in
// ns and its stack, leaf first; a stack entry of several names is one
// location with inlined calls, the callee first.
func cpuProfile(t *testing.T, samples map[int64][][]string) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
	}
	funcs := map[string]*profile.Function{}
	for v, stack := range samples {
		s := &profile.Sample{Value: []int64{1, v}}
		for _, names := range stack {
			loc := &profile.Location{ID: uint64(len(p.Location) + 1)}
			for _, n := range names {
				f, ok := funcs[n]
				if !ok {
					f = &profile.Function{ID: uint64(len(funcs) + 1), Name: n}
					funcs[n] = f
					p.Function = append(p.Function, f)
				}
				loc.Line = append(loc.Line, profile.Line{Function: f})
			}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A sample is charged to the component nearest its leaf: an allocation
// to the JSON encoder that made it, a syscall to go-redis, our code only
// for what it does itself, and the rest to the Go runtime.
func TestParts_charges_each_sample_to_the_component_nearest_its_leaf(t *testing.T) {
	prof := cpuProfile(t, map[int64][][]string{
		400: {{"internal/runtime/syscall/linux.Syscall6"}, {"github.com/redis/go-redis/v9.(*baseClient).pipelineProcessCmds"},
			{"github.com/stepwise-run/stepwise/pipeline/store.(*Store).EndStepAndClaim"}},
		300: {{"runtime.mallocgc"}, {"encoding/json.Marshal", "github.com/stepwise-run/stepwise/pipeline/stepworker.(*Worker).commit"}},
		200: {{"github.com/stepwise-run/stepwise/pipeline/stepworker.(*Worker).handleStep"}},
		100: {{"runtime.gcBgMarkWorker"}},
	})
	parts, err := bench.Parts(bytes.NewReader(prof), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	want := []bench.Part{
		{Name: "Redis client (go-redis)", Share: 0.4}, {Name: "JSON (encoding/json)", Share: 0.3},
		{Name: "our handlers and the rest of stepwise", Share: 0.2}, {Name: "Go runtime (GC, scheduler)", Share: 0.1},
	}
	if len(parts) != len(want) {
		t.Fatalf("parts %+v, want %+v", parts, want)
	}
	for i := range want {
		if parts[i].Name != want[i].Name || parts[i].Share < want[i].Share-1e-9 || parts[i].Share > want[i].Share+1e-9 {
			t.Errorf("part %d: %+v, want %+v", i, parts[i], want[i])
		}
	}
	if _, err := bench.Parts(bytes.NewReader(prof), "alloc_space"); err == nil {
		t.Error("a CPU profile gave allocation shares")
	}
}
