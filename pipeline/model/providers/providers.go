package providers

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/openai"
	"github.com/stepwise-run/stepwise/pipeline/model/script"
	"github.com/stepwise-run/stepwise/pipeline/model/synthetic"
)

// Option adjusts how New builds a model.
type Option func(*options)

type options struct {
	log *slog.Logger
}

// WithLogger gives the model a logger, for providers that log (openai logs
// retried responses). The default logs nothing.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// New builds the model cfg describes, choosing the provider by cfg.Provider:
// script (script.Parse of the model object), openai (openai.New; the API key
// must be in the environment variable api_key_env names) or synthetic
// (synthetic.Parse). Each provider validates its own settings and reports
// every problem at once. An unknown or missing provider is an error naming
// the known ones. A cfg built in code, without Raw, is read from its fields.
func New(cfg config.Model, opts ...Option) (model.Model, error) {
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	raw := cfg.Raw
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(cfg); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	switch cfg.Provider {
	case config.ProviderScript:
		return built(script.Parse(raw))
	case config.ProviderOpenAI:
		return built(openai.New(cfg, openai.WithLogger(o.log)))
	case config.ProviderSynthetic:
		return built(synthetic.Parse(raw))
	case "":
		return nil, fmt.Errorf("model: provider is missing; want one of %s", strings.Join(config.Providers(), ", "))
	default:
		return nil, fmt.Errorf("model: unknown provider %q; want one of %s", cfg.Provider, strings.Join(config.Providers(), ", "))
	}
}

// built returns a nil interface, not a typed nil pointer, with an error.
func built[M model.Model](m M, err error) (model.Model, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}
