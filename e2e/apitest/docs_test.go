package apitest

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/e2e/framework"
)

// TestEveryFieldIsDocumented walks the schemas of the CRDs this package
// installs and fails for any field without a description: kubectl explain
// shows the description, and an empty one leaves a user with only a type.
func TestEveryFieldIsDocumented(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(framework.RepoRoot(), "deploy", "crds", "shipstream.io_*.yaml"))
	if err != nil || len(files) != 5 {
		t.Fatalf("want the 5 CRD manifests in deploy/crds, found %v (%v)", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		fields := 0
		for _, v := range crd.Spec.Versions {
			root := v.Schema.OpenAPIV3Schema
			if root == nil {
				t.Errorf("%s %s: no schema", crd.Spec.Names.Kind, v.Name)
				continue
			}
			// metadata is the API machinery's own, documented by Kubernetes.
			top := *root
			top.Properties = map[string]apiextv1.JSONSchemaProps{}
			for name, prop := range root.Properties {
				if name != "metadata" {
					top.Properties[name] = prop
				}
			}
			walkFields(&top, crd.Spec.Names.Kind, func(path string, documented bool) {
				fields++
				if !documented {
					t.Errorf("%s has no description", path)
				}
			})
		}
		// Guard against a walk that silently visits nothing.
		if fields < 10 {
			t.Errorf("%s: only %d fields visited; the schema walk is broken", crd.Spec.Names.Kind, fields)
		}
	}
}

// walkFields calls visit for every property below s, in a stable order.
func walkFields(s *apiextv1.JSONSchemaProps, path string, visit func(path string, documented bool)) {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prop := s.Properties[name]
		p := path + "." + name
		visit(p, prop.Description != "")
		walkFields(&prop, p, visit)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walkFields(s.Items.Schema, path+"[]", visit)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walkFields(s.AdditionalProperties.Schema, path+"{}", visit)
	}
}
