package plugin_test

import (
	"os"
	"strings"
	"testing"
)

// TestPluginsDoc_examples_are_the_example_tests_code ties docs/plugins.md's
// examples to example_test.go: each Go block marked <!-- example_test.go -->
// is in it word for word, so the examples the doc shows are those that run.
func TestPluginsDoc_examples_are_the_example_tests_code(t *testing.T) {
	doc, err := os.ReadFile("../../docs/plugins.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	const mark = "<!-- example_test.go -->\n```go\n"
	blocks := strings.Split(string(doc), mark)[1:]
	if len(blocks) == 0 {
		t.Fatal("docs/plugins.md marks no example")
	}
	for _, b := range blocks {
		code, _, ok := strings.Cut(b, "\n```")
		if !ok {
			t.Fatalf("an example block does not end: %.60q", b)
		}
		if !strings.Contains(string(src), code) {
			t.Errorf("docs/plugins.md shows code example_test.go does not run:\n%s", code)
		}
	}
}
