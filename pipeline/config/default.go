package config

import (
	_ "embed"
	"fmt"
)

//go:embed default.yaml
var defaultYAML []byte

// Default returns a fresh copy of the built-in configuration: agent
// "assistant" on the script model, whose three turns call echo, then sleep,
// then answer; tools echo, sleep and fail. It is what programs use without
// --config. Callers may change the copy they get.
func Default() *Config {
	c, err := Parse(defaultYAML)
	if err != nil {
		// default.yaml is embedded and covered by tests.
		panic(fmt.Sprintf("config: embedded default.yaml is invalid: %v", err))
	}
	return c
}

// DefaultYAML returns the text of the built-in configuration, a starting
// point for a file of one's own.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }
