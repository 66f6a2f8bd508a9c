package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// TestCRDManifestsPassServerValidation runs the API server's own CRD
// validation (schema structure, CEL compilation and cost estimates, default
// values checked against their schema) over deploy/crds. The integration
// tests in e2e/apitest install the same files into a real API server; this
// gives the same verdict in a second, with the exact message, while editing
// markers.
func TestCRDManifestsPassServerValidation(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(here), "..", "..", "..", "..", "deploy", "crds", "shipstream.io_*.yaml"))
	if err != nil || len(files) != 5 {
		t.Fatalf("want the 5 CRD manifests in deploy/crds, found %v (%v)", files, err)
	}
	scheme := k8sruntime.NewScheme()
	if err := apiextensions.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v1crd apiextv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &v1crd); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		// Stored versions are written by the API server after creation.
		v1crd.Status.StoredVersions = []string{"v1alpha1"}
		var crd apiextensions.CustomResourceDefinition
		if err := scheme.Convert(&v1crd, &crd, nil); err != nil {
			t.Fatal(err)
		}
		for _, e := range validation.ValidateCustomResourceDefinition(context.Background(), &crd) {
			t.Errorf("%s: %v", filepath.Base(f), e)
		}
	}
}
