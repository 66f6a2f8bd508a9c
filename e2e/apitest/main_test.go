// Package apitest checks the shipstream.io/v1alpha1 CRDs against a real
// kube-apiserver: the samples are accepted, every admission rule refuses a
// bad object with a message naming the field, immutable fields refuse
// updates, defaults are applied, and kubectl explain shows the field docs.
package apitest

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/e2e/framework"
)

var cp *framework.ControlPlane

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{CRDDir: "deploy/crds"}, &cp)
}

var resources = map[string]schema.GroupVersionResource{
	"MysqlFailoverGroup":      {Group: "shipstream.io", Version: "v1alpha1", Resource: "mysqlfailovergroups"},
	"MysqlBackup":             {Group: "shipstream.io", Version: "v1alpha1", Resource: "mysqlbackups"},
	"MysqlBackupVerification": {Group: "shipstream.io", Version: "v1alpha1", Resource: "mysqlbackupverifications"},
	"MysqlStandbyCluster":     {Group: "shipstream.io", Version: "v1alpha1", Resource: "mysqlstandbyclusters"},
	"MysqlDatabase":           {Group: "shipstream.io", Version: "v1alpha1", Resource: "mysqldatabases"},
}

func dynamicClient(t *testing.T) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// object parses a YAML manifest into an unstructured object.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatalf("bad test manifest: %v", err)
	}
	return &unstructured.Unstructured{Object: m}
}

// create submits obj with strict field validation, as kubectl does since 1.25.
func create(t *testing.T, dc dynamic.Interface, ns string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	gvr, ok := resources[obj.GetKind()]
	if !ok {
		t.Fatalf("unknown kind %q", obj.GetKind())
	}
	return dc.Resource(gvr).Namespace(ns).Create(ctx(t), obj, metav1.CreateOptions{FieldValidation: "Strict"})
}

func update(t *testing.T, dc dynamic.Interface, ns string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	return dc.Resource(resources[obj.GetKind()]).Namespace(ns).Update(ctx(t), obj, metav1.UpdateOptions{FieldValidation: "Strict"})
}

// edit changes one field of a manifest: path is dotted with [i] list indexes
// (spec.sites[0].serverID); value is YAML; remove deletes the field.
type edit struct {
	path   string
	value  string
	remove bool
}

func set(path, value string) edit { return edit{path: path, value: value} }
func del(path string) edit        { return edit{path: path, remove: true} }

func apply(t *testing.T, obj *unstructured.Unstructured, edits ...edit) {
	t.Helper()
	for _, e := range edits {
		var v any
		if !e.remove {
			if err := yaml.Unmarshal([]byte(e.value), &v); err != nil {
				t.Fatalf("edit %s: bad YAML value: %v", e.path, err)
			}
		}
		if err := setPath(obj.Object, splitPath(e.path), v, e.remove); err != nil {
			t.Fatalf("edit %s: %v", e.path, err)
		}
	}
}

type step struct {
	key   string
	index int // -1 when the step is a map key only
}

func splitPath(path string) []step {
	var steps []step
	for _, part := range strings.Split(path, ".") {
		key, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			key = part[:i]
			n, err := strconv.Atoi(strings.TrimSuffix(part[i+1:], "]"))
			if err != nil {
				panic("bad path " + path)
			}
			idx = n
		}
		steps = append(steps, step{key: key, index: idx})
	}
	return steps
}

// setPath walks maps and lists, creating missing maps on the way.
func setPath(m map[string]any, steps []step, v any, remove bool) error {
	s := steps[0]
	last := len(steps) == 1
	if s.index < 0 {
		if last {
			if remove {
				delete(m, s.key)
			} else {
				m[s.key] = v
			}
			return nil
		}
		next, ok := m[s.key].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[s.key] = next
		}
		return setPath(next, steps[1:], v, remove)
	}
	list, _ := m[s.key].([]any)
	if s.index > len(list) {
		return fmt.Errorf("index %d beyond list %s of length %d", s.index, s.key, len(list))
	}
	if s.index == len(list) { // append
		list = append(list, map[string]any{})
		m[s.key] = list
	}
	if last {
		if remove {
			m[s.key] = append(list[:s.index:s.index], list[s.index+1:]...)
		} else {
			list[s.index] = v
		}
		return nil
	}
	next, ok := list[s.index].(map[string]any)
	if !ok {
		return fmt.Errorf("%s[%d] is not an object", s.key, s.index)
	}
	return setPath(next, steps[1:], v, remove)
}

// kubectl runs bin/kubectl against the test server.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := cp.Kubectl(ctx(t), args...)
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errOut)
	}
	return out, nil
}

func samplesDir() string { return filepath.Join(framework.RepoRoot(), "deploy", "samples") }
