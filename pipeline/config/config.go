package config

import (
	"slices"
)

// Config is the one configuration file all stepwise programs share. Get one
// from Parse, Load or Default: they apply the defaults and validate. A Config
// built in code gets no defaults; start from Default() and change it instead.
//
// A Config is not changed by its methods and may be read from any number of
// goroutines.
type Config struct {
	Kafka       Kafka                `json:"kafka,omitzero"`
	StepWorker  StepWorker           `json:"stepworker,omitzero"`
	ToolWorker  ToolWorker           `json:"toolworker,omitzero"`
	Runs        Runs                 `json:"runs,omitzero"`
	Gateway     Gateway              `json:"gateway,omitzero"`
	Auth        Auth                 `json:"auth,omitzero"`
	Decisions   Decisions            `json:"decisions,omitzero"`
	RunRequests RunRequests          `json:"run_requests,omitzero"`
	Limits      Limits               `json:"limits,omitzero"`
	Budgets     Budgets              `json:"budgets,omitzero"`
	Agents      map[string]Agent     `json:"agents,omitempty"`
	Tools       map[string]Tool      `json:"tools,omitempty"` // built-ins echo, sleep, fail are added when absent
	MCPServers  map[string]MCPServer `json:"mcp_servers,omitempty"`
}

// setDefaults fills every zero setting with its default and adds the
// built-in tools the file does not define.
func (c *Config) setDefaults() {
	c.Kafka.setDefaults()
	c.StepWorker.setDefaults()
	c.ToolWorker.setDefaults()
	c.Runs.setDefaults()
	c.Gateway.setDefaults()
	c.Auth.setDefaults()
	c.Decisions.setDefaults()
	c.RunRequests.setDefaults()
	for name, a := range c.Agents {
		a.setDefaults()
		c.Agents[name] = a
	}
	if c.Tools == nil {
		c.Tools = make(map[string]Tool, len(Builtins()))
	}
	for _, name := range Builtins() {
		if _, ok := c.Tools[name]; !ok {
			c.Tools[name] = builtinTool(name)
		}
	}
	for name, t := range c.Tools {
		t.setDefaults(name)
		c.Tools[name] = t
	}
}

// Validate reports every problem of the configuration at once, joined with
// errors.Join, one per line, each with its path:
//
//	agents.assistant.tools[1]: unknown tool "x"
//
// Every problem matches ErrInvalid. Validate expects defaults applied, as
// Parse does; it does not change c.
func (c *Config) Validate() error {
	var ps problems
	c.Kafka.check(&ps, "kafka")
	c.StepWorker.check(&ps, "stepworker")
	c.ToolWorker.check(&ps, "toolworker", c.Kafka.TopicPrefix)
	c.Runs.check(&ps, "runs")
	c.Gateway.check(&ps, "gateway")
	c.Auth.check(&ps, "auth")
	c.Decisions.check(&ps, "decisions")
	c.RunRequests.check(&ps, "run_requests")
	c.Limits.check(&ps, "limits")
	c.Budgets.check(&ps, "budgets")
	for _, name := range sortedKeys(c.Agents) {
		c.Agents[name].check(&ps, field("agents", name), name, c)
	}
	for _, name := range sortedKeys(c.Tools) {
		c.Tools[name].check(&ps, field("tools", name), c)
	}
	for _, name := range sortedKeys(c.MCPServers) {
		c.MCPServers[name].check(&ps, field("mcp_servers", name))
	}
	return ps.err()
}

// Agent returns the agent named name.
func (c *Config) Agent(name string) (Agent, bool) {
	a, ok := c.Agents[name]
	return a, ok
}

// Tool returns the tool named name, built-ins included.
func (c *Config) Tool(name string) (Tool, bool) {
	t, ok := c.Tools[name]
	return t, ok
}

// Queues returns the queues of all tools, sorted, each once. With defaults
// applied it holds at least topics.DefaultQueue (the built-ins' queue).
func (c *Config) Queues() []string {
	qs := make([]string, 0, len(c.Tools))
	for _, t := range c.Tools {
		qs = append(qs, t.Queue)
	}
	slices.Sort(qs)
	return slices.Compact(qs)
}

// SecretEnvs names every environment variable the configuration reads a
// secret from: models' api_key_env, http tools' headers_env values, API
// keys' key_env and decision producers' keys. The workers redact their
// values from what they store and log (package secrets).
func (c *Config) SecretEnvs() []string {
	var out []string
	for _, name := range sortedKeys(c.Agents) {
		if env := c.Agents[name].Model.APIKeyEnv; env != "" {
			out = append(out, env)
		}
	}
	for _, name := range sortedKeys(c.Tools) {
		if h := c.Tools[name].Executor.HTTP; h != nil {
			for _, header := range sortedKeys(h.HeadersEnv) {
				out = append(out, h.HeadersEnv[header])
			}
		}
	}
	for _, k := range c.Auth.Keys {
		if k.KeyEnv != "" {
			out = append(out, k.KeyEnv)
		}
	}
	for _, name := range sortedKeys(c.Decisions.Producers) {
		p := c.Decisions.Producers[name]
		out = append(out, p.KeyEnv)
		if p.PreviousKeyEnv != "" {
			out = append(out, p.PreviousKeyEnv)
		}
	}
	return out
}
