package config_test

import (
	"encoding/json"
	"testing"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

func TestModel_keeps_the_whole_object_and_reads_the_shared_fields(t *testing.T) {
	cfg, err := config.Parse([]byte(`
agents:
  s:
    model:
      provider: script
      loop_last: true
      turns:
        - text: hi
          tool_calls: [{name: echo, arguments: {x: 1}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Agents["s"].Model
	if m.Provider != config.ProviderScript {
		t.Errorf("provider = %q", m.Provider)
	}
	var script struct {
		Provider string `json:"provider"`
		LoopLast bool   `json:"loop_last"`
		Turns    []struct {
			Text      string `json:"text"`
			ToolCalls []struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"tool_calls"`
		} `json:"turns"`
	}
	if err := json.Unmarshal(m.Raw, &script); err != nil {
		t.Fatal(err)
	}
	if script.Provider != "script" || !script.LoopLast || len(script.Turns) != 1 || script.Turns[0].Text != "hi" ||
		script.Turns[0].ToolCalls[0].Name != "echo" || string(script.Turns[0].ToolCalls[0].Arguments) != `{"x":1}` {
		t.Errorf("raw = %s, read as %+v", m.Raw, script)
	}
}

func TestModel_unmarshals_a_run_model_from_JSON(t *testing.T) {
	var m config.Model
	in := `{"provider":"script","turns":[{"text":"done"}]}`
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if m.Provider != "script" || string(m.Raw) != in || m.Validate() != nil {
		t.Errorf("model = %+v", m)
	}
	out, err := json.Marshal(m)
	if err != nil || string(out) != in {
		t.Errorf("Marshal = %s, %v; want the raw object", out, err)
	}
	for _, bad := range []string{`"gpt-4o"`, `[1]`, `{"provider": 1}`} {
		if err := json.Unmarshal([]byte(bad), new(config.Model)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestModel_built_in_code_marshals_its_fields(t *testing.T) {
	out, err := json.Marshal(config.Model{Provider: "openai", Name: "gpt-4o-mini"})
	if err != nil || string(out) != `{"provider":"openai","name":"gpt-4o-mini"}` {
		t.Errorf("Marshal = %s, %v", out, err)
	}
}
