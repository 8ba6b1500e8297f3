// Package providers builds the model a configuration names: script,
// openai or synthetic, by config.Model.Provider. The step worker builds each
// agent's model with it once, at start.
//
//	m, err := providers.New(agent.Model, providers.WithLogger(log))
//	if err != nil { /* the agent's runs fail with err */ }
//	resp, err := m.Infer(ctx, req)
package providers
