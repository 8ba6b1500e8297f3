package cli

import (
	"flag"
	"fmt"
	"strings"
)

// runFilter is a run filter as flags, by the name the gateway reads each
// under (GET /v1/runs's query, POST /v1/runs/rerun's filter).
type runFilter map[string]*string

// filterFlags defines on fs the flags of a run filter that `runs list`,
// `runs export` and `rerun` share.
func filterFlags(fs *flag.FlagSet) runFilter {
	return runFilter{
		"batch_id":    fs.String("batch", "", "runs of this `batch`"),
		"termination": fs.String("termination", "", "runs that ended with this `reason` (error, stopped, cancelled, ...)"),
		"status":      fs.String("status", "", "runs in this `status` (created, running, waiting, done)"),
		"agent":       fs.String("agent", "", "runs of this `agent`"),
		"since":       fs.String("since", "", "runs created at this `time` or later (RFC 3339)"),
		"until":       fs.String("until", "", "runs created before this `time` (RFC 3339)"),
	}
}

// set is the filter's fields that were given.
func (f runFilter) set() map[string]string {
	out := map[string]string{}
	for k, v := range f {
		if *v != "" {
			out[k] = *v
		}
	}
	return out
}

// metaFlag is a repeatable --meta KEY=VALUE: the metadata a search keeps
// (GET /v1/runs?meta.KEY=VALUE).
type metaFlag map[string]string

func (m metaFlag) String() string { return fmt.Sprint(map[string]string(m)) }

func (m metaFlag) Set(v string) error {
	key, value, ok := strings.Cut(v, "=")
	if !ok || key == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	m[key] = value
	return nil
}
