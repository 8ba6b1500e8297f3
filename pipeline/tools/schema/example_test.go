package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/stepwise-run/stepwise/pipeline/tools/schema"
)

func Example() {
	s, err := schema.Compile(json.RawMessage(`{
		"type": "object",
		"properties": {"amount": {"type": "number"}, "currency": {"enum": ["EUR", "USD"]}},
		"required": ["amount", "currency"]
	}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Validate(json.RawMessage(`{"amount": 10, "currency": "EUR"}`)))
	fmt.Println(s.Validate(json.RawMessage(`{"amount": "10"}`)))
	// Output:
	// <nil>
	// missing property "currency"; /amount: got string, want number
}
