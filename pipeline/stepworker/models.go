package stepworker

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/config"
	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/model/providers"
	"github.com/stepwise-run/stepwise/pipeline/model/script"
)

// models resolves the model of a run: its own script model when it brought
// one (runs may only bring scripts; other providers come from the
// configuration), else that of the agent holding it (Run.CurrentAgent: a
// handoff changes it), built once at start. An agent whose model cannot be
// built fails its runs with the reason, not the worker's start: one bad agent
// must not stop the others.
type models struct {
	byAgent map[string]resolved

	// scripts holds the script models runs brought, parsed, by their JSON:
	// a run's steps all use the same one, and parsing it at every step was
	// 6 % of a step worker's CPU on runs of 10 steps (a script model is
	// immutable and safe for concurrent use). Emptied when the JSON it
	// holds would pass maxScriptBytes: a run's script can be big, and
	// each is kept about twice (its key and its parsed form).
	mu          sync.Mutex
	scripts     map[string]parsedScript
	scriptBytes int
	maxWait     time.Duration // runs.max_script_delay, which a run's script may not pass
}

type parsedScript struct {
	model *script.Model
	err   error
}

// maxScriptBytes bounds the JSON of the parsed script models kept.
const maxScriptBytes = 8 << 20

type resolved struct {
	model model.Model
	key   string // for limits (config.Model.Key)
	err   error
}

func newModels(cfg *config.Config) (*models, error) {
	m := &models{byAgent: map[string]resolved{}, scripts: map[string]parsedScript{}, maxWait: cfg.Runs.MaxScriptDelay.Duration}
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
		return m.script(run.Model)
	}
	r, ok := m.byAgent[run.CurrentAgent]
	if !ok {
		return nil, fmt.Errorf("agent %q is not configured", run.CurrentAgent)
	}
	return r.model, r.err
}

// script is the parsed script model raw, parsed once while it is kept. A
// script that waits longer than runs.max_script_delay is refused here too:
// the gateway refuses it, but a run created before the cap was lowered may
// have one.
func (m *models) script(raw json.RawMessage) (model.Model, error) {
	m.mu.Lock()
	p, ok := m.scripts[string(raw)]
	m.mu.Unlock()
	if !ok {
		p.model, p.err = script.ParseRun(raw, m.maxWait)
		m.mu.Lock()
		if m.scriptBytes+len(raw) > maxScriptBytes {
			clear(m.scripts)
			m.scriptBytes = 0
		}
		if _, again := m.scripts[string(raw)]; !again && len(raw) <= maxScriptBytes {
			m.scripts[string(raw)] = p
			m.scriptBytes += len(raw)
		}
		m.mu.Unlock()
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.model, nil
}

// keyOf names the model of a run for limits: "script" for a run's own
// script, its agent's model's key otherwise.
func (m *models) keyOf(run pipeline.Run) string {
	if len(run.Model) > 0 {
		return config.ProviderScript
	}
	return m.byAgent[run.CurrentAgent].key
}

func fromConfig(c config.Model) (model.Model, error) { return providers.New(c) }
