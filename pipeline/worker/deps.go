package worker

import (
	"errors"
	"log/slog"
	"time"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/limits"
	"github.com/stepwise-run/stepwise/pipeline/metrics"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/secrets"
	"github.com/stepwise-run/stepwise/pipeline/store"
	"github.com/stepwise-run/stepwise/pipeline/tools/catalog"
	"github.com/stepwise-run/stepwise/topics"
)

// Deps is what a worker needs. Store, Publisher, Config and WorkerID are
// required; the tuning numbers come from Config (stepworker, toolworker).
type Deps struct {
	Store     *store.Store
	Publisher topics.Publisher
	Names     topics.Names // default topics.NewNames("")
	Config    *config.Config
	Catalog   *catalog.Catalog // the MCP tools' schemas shared between workers; nil: not shared
	Plugins   *plugin.Registry // the plugins agents may enable; nil: none
	WorkerID  string           // unique per process; owns the leases it takes
	Now       func() time.Time // default time.Now
	Logger    *slog.Logger     // default slog.Default()
	// Redact hides the configuration's secrets in what tools and models
	// return before it is stored (secrets.go); nil redacts nothing.
	Redact *secrets.Redactor
	// Metrics counts what the worker does; nil counts nothing.
	Metrics *metrics.Set
	// Limits is the flow control the workers share (limits:); nil: New
	// over the store's Redis would be the same with no limits configured.
	Limits *limits.Limiter
}

// WithDefaults returns d with its defaults filled in, after checking it:
// every missing dependency is reported at once, prefixed with who (the
// worker kind).
func (d Deps) WithDefaults(who string) (Deps, error) {
	var errs []error
	for _, missing := range []struct {
		name string
		nil  bool
	}{{"Store", d.Store == nil}, {"Publisher", d.Publisher == nil}, {"Config", d.Config == nil}, {"WorkerID", d.WorkerID == ""}} {
		if missing.nil {
			errs = append(errs, errors.New(who+": "+missing.name+" is required"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return d, err
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Names == (topics.Names{}) {
		d.Names = topics.NewNames("")
	}
	if d.Plugins == nil {
		d.Plugins = plugin.NewRegistry()
	}
	if d.Limits == nil {
		d.Limits = limits.New(nil, "", config.Limits{})
	}
	return d, nil
}
