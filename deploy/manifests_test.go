package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/stepwise-run/stepwise/pipeline/config"
)

// document is one YAML document of a manifest file.
type document struct {
	file string
	raw  []byte
	kind string
	name string
}

// documents splits every manifest under dir into its documents.
func documents(t *testing.T, dir string) []document {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	var docs []document
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range bytes.Split(b, []byte("\n---\n")) {
			var head struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(part, &head); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if head.Kind == "" {
				continue // comments only
			}
			docs = append(docs, document{file: filepath.Base(f), raw: part, kind: head.Kind, name: head.Metadata.Name})
		}
	}
	return docs
}

// kustomization is the part of kustomize's Kustomization these files use.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images,omitempty"`
}

// Every Kubernetes manifest decodes strictly into its API type (an unknown
// or misplaced field fails), every file a kustomization lists exists, and
// the Deployments mount the configuration the ConfigMap holds.
func TestManifests_decode_strictly(t *testing.T) {
	seen := map[string]bool{}
	for _, dir := range []string{"k8s", "k8s/keda"} {
		for _, d := range documents(t, dir) {
			var err error
			switch d.kind {
			case "Deployment":
				err = yaml.UnmarshalStrict(d.raw, new(appsv1.Deployment))
			case "Service":
				err = yaml.UnmarshalStrict(d.raw, new(corev1.Service))
			case "ConfigMap":
				err = yaml.UnmarshalStrict(d.raw, new(corev1.ConfigMap))
			case "Kustomization":
				var k kustomization
				if err = yaml.UnmarshalStrict(d.raw, &k); err == nil {
					for _, r := range k.Resources {
						if _, statErr := os.Stat(filepath.Join(dir, r)); statErr != nil {
							err = fmt.Errorf("resource %s: %w", r, statErr)
						}
					}
				}
			case "ScaledObject":
				continue // TestKEDA
			default:
				err = fmt.Errorf("kind %s has no check here: add one", d.kind)
			}
			if err != nil {
				t.Errorf("%s/%s (%s %s): %v", dir, d.file, d.kind, d.name, err)
			}
			seen[d.kind+"/"+d.name] = true
		}
	}
	for _, want := range []string{"Deployment/stepwise-gateway", "Deployment/stepwise-stepworker", "Deployment/stepwise-toolworker-default",
		"Deployment/stepwise-toolworker-payments", "Service/stepwise-gateway", "ConfigMap/stepwise-config", "ConfigMap/stepwise-env"} {
		if !seen[want] {
			t.Errorf("no %s among the manifests", want)
		}
	}
}

// The KEDA ScaledObjects are valid against KEDA's own CRD schema (as the
// API server would check them, unknown fields refused rather than
// pruned), scale Deployments that exist, and watch the topics and
// consumer groups the workers and gateways of deploy/stepwise.yaml use,
// within its partition count.
func TestKEDA_scaled_objects_match_the_CRD_and_the_deployment(t *testing.T) {
	schema := crdSchema(t, "testdata/keda.sh_scaledobjects.yaml")
	cfg, err := config.Load("stepwise.yaml")
	if err != nil {
		t.Fatal(err)
	}
	names := cfg.Kafka.Names()
	deployments := map[string][]string{} // name → its tool queues ("" for the step workers)
	for _, d := range documents(t, "k8s") {
		if d.kind != "Deployment" {
			continue
		}
		var dep appsv1.Deployment
		if err := yaml.Unmarshal(d.raw, &dep); err != nil {
			t.Fatal(err)
		}
		args := dep.Spec.Template.Spec.Containers[0].Args
		if i := slices.Index(args, "--queues"); i >= 0 {
			deployments[d.name] = strings.Split(args[i+1], ",")
		} else {
			deployments[d.name] = nil
		}
	}
	scaled := map[string]bool{}
	for _, d := range documents(t, "k8s/keda") {
		if d.kind != "ScaledObject" {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal(d.raw, &obj); err != nil {
			t.Fatal(err)
		}
		// The API server checks metadata as ObjectMeta (the CRD's schema
		// leaves it open), the rest against the CRD.
		meta, _ := yaml.Marshal(obj["metadata"])
		if err := yaml.UnmarshalStrict(meta, new(metav1.ObjectMeta)); err != nil {
			t.Errorf("ScaledObject %s: metadata: %v", d.name, err)
		}
		delete(obj, "metadata")
		for _, p := range validate("", obj, schema) {
			t.Errorf("ScaledObject %s: %s", d.name, p)
		}
		var so struct {
			Spec struct {
				ScaleTargetRef struct {
					Name string `json:"name"`
				} `json:"scaleTargetRef"`
				MaxReplicaCount int32 `json:"maxReplicaCount"`
				Triggers        []struct {
					Type     string            `json:"type"`
					Metadata map[string]string `json:"metadata"`
				} `json:"triggers"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(d.raw, &so); err != nil {
			t.Fatal(err)
		}
		target := so.Spec.ScaleTargetRef.Name
		queues, ok := deployments[target]
		if !ok {
			t.Errorf("ScaledObject %s scales %s, which is no Deployment", d.name, target)
			continue
		}
		scaled[target] = true
		if so.Spec.MaxReplicaCount > cfg.Kafka.Partitions {
			t.Errorf("ScaledObject %s: maxReplicaCount %d > kafka.partitions %d: the extra consumers would idle", d.name, so.Spec.MaxReplicaCount, cfg.Kafka.Partitions)
		}
		want := map[string]string{names.RunSteps(): cfg.Kafka.TopicPrefix + "stepworker", names.ToolResults(): cfg.Kafka.TopicPrefix + "stepworker"}
		if target == "stepwise-gateway" {
			want = map[string]string{names.RunRequests(): cfg.Kafka.TopicPrefix + "gateway"}
		}
		if queues != nil {
			want = map[string]string{}
			for _, q := range queues {
				want[names.ToolCalls(q)] = cfg.Kafka.TopicPrefix + "toolworker"
			}
		}
		for _, tr := range so.Spec.Triggers {
			topic := tr.Metadata["topic"]
			if tr.Type != "kafka" || want[topic] == "" || tr.Metadata["consumerGroup"] != want[topic] || tr.Metadata["bootstrapServersFromEnv"] != "STEPWISE_KAFKA_BROKERS" {
				t.Errorf("ScaledObject %s: trigger %s %v does not watch what %s consumes (%v)", d.name, tr.Type, tr.Metadata, target, want)
			}
		}
	}
	for name := range deployments {
		if !scaled[name] {
			t.Errorf("Deployment %s has no ScaledObject", name)
		}
	}
}

// crdSchema reads a CRD's openAPIV3Schema (its first version's).
func crdSchema(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil || len(crd.Spec.Versions) == 0 {
		t.Fatalf("%s: %v", path, err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// validate checks v against a structural OpenAPI v3 schema of a CRD:
// types, enums, required properties, and (stricter than the API server,
// which would prune them) no property the schema does not declare.
func validate(path string, v any, s map[string]any) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, cmpPath(path)+": "+fmt.Sprintf(format, args...)) }
	if s["x-kubernetes-int-or-string"] == true {
		switch v.(type) {
		case string, float64:
			return nil
		}
		bad("want an integer or a string, got %T", v)
		return out
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, v) {
		bad("%v is not one of %v", v, enum)
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want an object, got %T", v)
			return out
		}
		props, _ := s["properties"].(map[string]any)
		extra, _ := s["additionalProperties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := m[r]; !ok {
				bad("required property %s is missing", r)
			}
		}
		for k, val := range m {
			switch ps, ok := props[k].(map[string]any); {
			case ok:
				out = append(out, validate(path+"."+k, val, ps)...)
			case extra != nil:
				out = append(out, validate(path+"."+k, val, extra)...)
			case s["x-kubernetes-preserve-unknown-fields"] == true:
			default:
				bad("unknown property %s", k)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("want an array, got %T", v)
			return out
		}
		items, _ := s["items"].(map[string]any)
		for i, e := range a {
			out = append(out, validate(fmt.Sprintf("%s[%d]", path, i), e, items)...)
		}
	case "string":
		if _, ok := v.(string); !ok {
			bad("want a string, got %T (%v)", v, v)
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			bad("want an integer, got %v", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want a boolean, got %T", v)
		}
	}
	return out
}

func cmpPath(p string) string {
	if p == "" {
		return "(root)"
	}
	return strings.TrimPrefix(p, ".")
}

func asStrings(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, e := range a {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// The compose file loads with compose-go, the Compose Specification's own
// loader, which checks it against the specification's schema.
func TestCompose_loads_against_the_compose_specification(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(".")
	project, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  abs,
		ConfigFiles: []types.ConfigFile{{Filename: "compose.yaml", Content: b}},
		Environment: types.Mapping{"STEPWISE_ADMIN_KEY": "test-admin-key-123456"},
	}, func(o *loader.Options) { o.SetProjectName("stepwise", true) })
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, want := range []string{"gateway", "stepworker", "toolworker"} {
		if _, err := project.GetService(want); err != nil {
			t.Errorf("compose.yaml: %v", err)
		}
	}
}
