package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// components name the parts of a process a CPU sample is charged to, by
// the package of a function in its stack: the first that matches, going
// from the leaf to the root, takes the sample. So a syscall or an
// allocation counts for the code that made it (go-redis's write, the
// JSON encoder's buffer), and our own code only for what it does itself.
var components = []struct {
	name     string
	prefixes []string
}{
	{"JSON (encoding/json)", []string{"encoding/json."}},
	{"logging (log/slog)", []string{"log/slog."}},
	{"tracing (OpenTelemetry)", []string{"go.opentelemetry.io/"}},
	{"Redis client (go-redis)", []string{"github.com/redis/go-redis/"}},
	{"Watermill", []string{"github.com/ThreeDotsLabs/watermill"}},
	{"Kafka client (Sarama)", []string{"github.com/IBM/sarama.", "github.com/eapache/", "github.com/rcrowley/go-metrics", "github.com/dnwe/otelsarama"}},
	{"embedded broker (kfake)", []string{"github.com/twmb/franz-go/"}},
	{"our store (pipeline/store)", []string{"github.com/stepwise-run/stepwise/pipeline/store."}},
	{"our handlers and the rest of stepwise", []string{"github.com/stepwise-run/stepwise/"}},
}

// idle is what a sample none of components claims is charged to: the
// Go runtime's own work (the garbage collector, the scheduler) and the
// few other packages called from none of them.
const idle = "Go runtime (GC, scheduler)"

// Part is one component's share of a profile.
type Part struct {
	Name  string  `json:"name"`
	Share float64 `json:"share"` // of the profile's total, 0 to 1
}

// Parts charges each sample of a profile (runtime/pprof's, as
// --cpuprofile and --allocprofile write them) to a component and returns
// each one's share of the values of sampleType ("cpu", "alloc_space"),
// the largest first.
func Parts(r io.Reader, sampleType string) ([]Part, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("read the profile: %w", err)
	}
	at := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == sampleType })
	if at < 0 {
		return nil, fmt.Errorf("the profile has no %s samples, only %v", sampleType, p.SampleType)
	}
	by := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		v := s.Value[at]
		by[component(s)] += v
		total += v
	}
	if total == 0 {
		return nil, fmt.Errorf("the profile holds no %s samples", sampleType)
	}
	out := make([]Part, 0, len(by))
	for name, v := range by {
		out = append(out, Part{Name: name, Share: float64(v) / float64(total)})
	}
	slices.SortFunc(out, func(a, b Part) int { return cmp.Compare(b.Share, a.Share) })
	return out, nil
}

// component is the component sample s is charged to.
func component(s *profile.Sample) string {
	for _, loc := range s.Location { // leaf first
		for _, line := range loc.Line { // the inlined callee first, its callers after
			if line.Function == nil {
				continue
			}
			name := line.Function.Name
			for _, c := range components {
				if slices.ContainsFunc(c.prefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
					return c.name
				}
			}
		}
	}
	return idle
}
