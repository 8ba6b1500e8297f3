package gateway

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/store"
)

// terminationReasons are the reasons a run ends with, for a filter.
var terminationReasons = []pipeline.TerminationReason{
	pipeline.ReasonNaturalEnd, pipeline.ReasonBehaviorRequested, pipeline.ReasonStopped,
	pipeline.ReasonCancelled, pipeline.ReasonBlocked, pipeline.ReasonError,
}

// parseFilter reads the run filter that GET /v1/runs takes in its query
// and POST /v1/runs/rerun in its body, field by field from get: status,
// agent, termination, batch_id, and since and until (RFC 3339; since
// inclusive, until exclusive, by creation time). It returns every problem
// at once.
func parseFilter(get func(string) string) (store.ListFilter, []string) {
	f := store.ListFilter{Agent: get("agent"), Batch: get("batch_id")}
	var problems []string
	if v := get("status"); v != "" {
		st, err := pipeline.ParseRunStatus(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("status %q is not one of created, running, waiting, done", v))
		}
		f.Status = st
	}
	if v := get("termination"); v != "" {
		f.Termination = pipeline.TerminationReason(v)
		if !slices.Contains(terminationReasons, f.Termination) {
			names := make([]string, len(terminationReasons))
			for i, r := range terminationReasons {
				names[i] = string(r)
			}
			problems = append(problems, fmt.Sprintf("termination %q is not one of %s", v, strings.Join(names, ", ")))
		}
	}
	for _, t := range []struct {
		name string
		at   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		v := get(t.name)
		if v == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %q is not an RFC 3339 time (2026-01-02T15:04:05Z)", t.name, v))
		}
		*t.at = at
	}
	return f, problems
}

// searchFilter reads what GET /v1/runs searches by beyond parseFilter into
// f: the tenant (an admin's tenant=, else the principal's own: a key of a
// tenant that names another is refused, 403) and each meta.KEY=VALUE, whose
// key the configuration must declare (runs.searchable_metadata) and whose
// value is at most store.MaxSearchValue bytes. It returns the problems of
// the metadata, for a 400 with the filter's others.
func (s *Server) searchFilter(r *http.Request, q url.Values, f *store.ListFilter) ([]string, *apiError) {
	f.Tenant = tenantFilter(r)
	if t := q.Get("tenant"); t != "" {
		if f.Tenant != "" && t != f.Tenant {
			return nil, apiErr(http.StatusForbidden, CodeForbidden, fmt.Sprintf("this key lists the runs of tenant %s only, not of %s", f.Tenant, t))
		}
		f.Tenant = t
	}
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(q)) {
		key, ok := strings.CutPrefix(name, "meta.")
		if !ok {
			continue
		}
		v := q.Get(name)
		switch {
		case !s.cfg.Store.Searchable(key):
			problems = append(problems, fmt.Sprintf("metadata key %q is not searchable: declare it in runs.searchable_metadata", key))
		case len(v) > store.MaxSearchValue:
			problems = append(problems, fmt.Sprintf("%s: a value of %d bytes; at most %d are searchable", name, len(v), store.MaxSearchValue))
		default:
			if f.Meta == nil {
				f.Meta = map[string]string{}
			}
			f.Meta[key] = v
		}
	}
	return problems, nil
}
