// Package contracts holds stepwise's published contracts as documents: the
// OpenAPI 3.1 document of the gateway's HTTP API (openapi.yaml) and the
// AsyncAPI 3.0 document of its Kafka topics (asyncapi.yaml). docs/ links to
// both; the gateway serves the first at GET /v1/openapi.json.
//
// Tests tie them to the code: the gateway's tests validate every request
// and answer against OpenAPI (pipeline/gateway), and the topics' golden
// payloads validate against AsyncAPI's schemas (contracts_test.go). `make
// contracts` checks both with their ecosystems' own validators (this
// directory's package.json).
//
//	doc, err := contracts.OpenAPIJSON() // the document, as JSON
package contracts
