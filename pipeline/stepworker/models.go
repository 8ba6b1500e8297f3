package stepworker

import (
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/providers"
	"github.com/stepwise-run/stepwise/pipeline/model/script"
)

// models resolves the model of a run: its own script model when it brought
// one (runs may only bring scripts; other providers come from the
// configuration), else its agent's, built once at start. An agent whose model cannot be
// built fails its runs with the reason, not the worker's start: one bad agent
// must not stop the others.
type models struct {
	byAgent map[string]resolved
}

type resolved struct {
	model model.Model
	key   string // for limits (config.Model.Key)
	err   error
}

func newModels(cfg *config.Config) (*models, error) {
	m := &models{byAgent: map[string]resolved{}}
	for name, a := range cfg.Agents {
		mdl, err := fromConfig(a.Model)
		if err != nil {
			err = fmt.Errorf("agent %s: %w", name, err)
		}
		m.byAgent[name] = resolved{model: mdl, key: a.Model.Key(), err: err}
	}
	return m, nil
}

func (m *models) forRun(run pipeline.Run) (model.Model, error) {
	if len(run.Model) > 0 {
		return script.Parse(run.Model)
	}
	r, ok := m.byAgent[run.Agent]
	if !ok {
		return nil, fmt.Errorf("agent %q is not configured", run.Agent)
	}
	return r.model, r.err
}

// keyOf names the model of a run for limits: "script" for a run's own
// script, its agent's model's key otherwise.
func (m *models) keyOf(run pipeline.Run) string {
	if len(run.Model) > 0 {
		return config.ProviderScript
	}
	return m.byAgent[run.Agent].key
}

func fromConfig(c config.Model) (model.Model, error) { return providers.New(c) }
