package config

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
)

// Parse reads a configuration from YAML 1.2 (or JSON), applies the defaults
// and validates it. It is strict: an unknown field, a value of the wrong
// kind, a duplicate key or an invalid setting is an error. Every problem is
// reported at once, one per line with its path, and matches ErrInvalid.
// Empty input is a valid configuration with only the defaults and the
// built-in tools.
func Parse(data []byte) (*Config, error) {
	j, err := yamlToJSON(data)
	if err != nil {
		return nil, &problem{msg: err.Error()}
	}
	var ps problems
	checkShape(&ps, "", j, reflect.TypeFor[Config]())
	if err := ps.err(); err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(j, &c); err != nil {
		// checkShape lets through only what decodes; this is a bug if reached.
		return nil, &problem{msg: err.Error()}
	}
	c.setDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Load reads and parses the configuration file at path; see Parse.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load config %s:\n%w", path, err)
	}
	return c, nil
}
