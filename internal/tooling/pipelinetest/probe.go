package pipelinetest

import (
	"context"
	"encoding/json"

	"github.com/stepwise-run/stepwise/pipeline"
	"github.com/stepwise-run/stepwise/pipeline/plugin"
	"github.com/stepwise-run/stepwise/pipeline/plugin/builtin"
)

// probe is the plugins a drive's workers may enable: the built-in
// compaction, and "probe", whose RunEnd
// hook is one of the worker's operations (inj counts it and may fail it;
// nil: a worker that does not fail) and counts, when it succeeds before a
// result of the run is out, in Outcome.RunEnds. It also executes the tool
// note, whose state command sets probe.noted, and answers echo at ToolGate
// once probe.noted is set (Regate).
func (d *driver) probe(inj *Injector) *plugin.Registry {
	reg := plugin.NewRegistry()
	reg.Add(builtin.Compaction, builtin.NewCompaction)
	reg.Add("probe", func(json.RawMessage) (plugin.Plugin, error) { return probePlugin{d, inj}, nil })
	return reg
}

type probePlugin struct {
	d   *driver
	inj *Injector
}

func (p probePlugin) Register(r *plugin.Registrar) error {
	r.StateKey(noted.Name, noted.Persistent)
	r.Hook(pipeline.PhaseToolGate, func(_ context.Context, pc *plugin.Context) (plugin.Command, error) {
		var cmd plugin.Command
		if _, ok := pc.State[noted.Name]; !ok || pc.Call.Tool != "echo" {
			return cmd, nil
		}
		err := cmd.Schedule(plugin.ToolIntercept, plugin.Intercept{Intercept: pipeline.Intercept{
			Action: pipeline.GateSetResult, Result: json.RawMessage(`{"noted":true}`)}})
		return cmd, err
	})
	r.Hook(pipeline.PhaseRunEnd, func(context.Context, *plugin.Context) (plugin.Command, error) {
		if p.inj != nil {
			if err := p.inj.step(); err != nil {
				return plugin.Command{}, err
			}
		}
		if len(p.d.bus.published(p.d.names.RunResults())) == 0 {
			p.d.runEnds.Add(1)
		}
		return plugin.Command{}, nil
	})
	return r.Tool("note", func(context.Context, *plugin.Context, json.RawMessage) (plugin.ToolOutput, error) {
		var cmd plugin.Command
		if err := noted.Set(&cmd, true); err != nil {
			return plugin.ToolOutput{}, err
		}
		return plugin.WithCommand(map[string]bool{"noted": true}, cmd)
	})
}

var noted = plugin.Key[bool]{Name: "probe.noted", Persistent: true}
