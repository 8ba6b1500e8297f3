package contracts

import (
	_ "embed"
	"fmt"

	"sigs.k8s.io/yaml"
)

// OpenAPI is the OpenAPI 3.1 document of the gateway's HTTP API, as YAML.
//
//go:embed openapi.yaml
var OpenAPI []byte

// AsyncAPI is the AsyncAPI 3.0 document of the Kafka topics, as YAML.
//
//go:embed asyncapi.yaml
var AsyncAPI []byte

// OpenAPIJSON returns OpenAPI converted to JSON, a new slice each call.
func OpenAPIJSON() ([]byte, error) {
	return toJSON("openapi.yaml", OpenAPI)
}

// AsyncAPIJSON returns AsyncAPI converted to JSON, a new slice each call.
func AsyncAPIJSON() ([]byte, error) {
	return toJSON("asyncapi.yaml", AsyncAPI)
}

func toJSON(name string, doc []byte) ([]byte, error) {
	b, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("contracts: %s: %w", name, err)
	}
	return b, nil
}
