package stepworker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/stepwise-run/stepwise/pipeline/model"
	"github.com/stepwise-run/stepwise/pipeline/tools/schema"
	"github.com/stepwise-run/stepwise/pipeline/versions"
)

// toolSpecs returns the tools of ver, an agent version, as the model is
// told about them: name, description and JSON Schema from the version, or,
// for an MCP tool the configuration leaves bare, from the catalog the tool
// workers publish.
func (w *Worker) toolSpecs(ctx context.Context, ver *versions.Version, names []string) []model.ToolSpec {
	specs := make([]model.ToolSpec, 0, len(names))
	var bare []string
	for _, n := range names {
		t, _ := ver.Tool(n)
		specs = append(specs, model.ToolSpec{Name: n, Description: t.Description, Parameters: t.Parameters})
		if t.Executor.MCP != nil && (t.Description == "" || len(t.Parameters) == 0) {
			bare = append(bare, n)
		}
	}
	if len(bare) == 0 || w.catalog == nil {
		return specs
	}
	found, err := w.catalog.Get(ctx, bare)
	if err != nil {
		w.log.Warn("read the tool catalog; MCP tools go without their schemas", "error", err)
		return specs
	}
	for i, s := range specs {
		c, ok := found[s.Name]
		if !ok {
			continue
		}
		if s.Description == "" {
			specs[i].Description = c.Description
		}
		if len(s.Parameters) == 0 {
			specs[i].Parameters = c.Parameters
		}
	}
	return specs
}

// schemas compiles each distinct JSON Schema once. Safe for concurrent use.
type schemas struct{ m sync.Map } // string(raw) → *schema.Schema or error

// check validates args against raw, a tool's parameters; an empty schema
// accepts any object.
func (s *schemas) check(raw json.RawMessage, args json.RawMessage) error {
	v, ok := s.m.Load(string(raw))
	if !ok {
		sc, err := schema.Compile(raw)
		if err != nil {
			v = fmt.Errorf("the tool's parameters are not a usable JSON Schema: %w", err)
		} else {
			v = sc
		}
		s.m.Store(string(raw), v)
	}
	if err, bad := v.(error); bad {
		return err
	}
	return v.(*schema.Schema).Validate(args)
}

func paramsOf(specs []model.ToolSpec) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(specs))
	for _, s := range specs {
		out[s.Name] = s.Parameters
	}
	return out
}
