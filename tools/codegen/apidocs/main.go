// Command apidocs writes the field reference of docs/api.md from the CRD
// manifests in deploy/crds, so the reference always matches what the API
// server enforces: every field with its type, default and admission rules.
//
// It replaces only the text between the BEGIN/END markers of the target
// file; the hand-written parts around them are kept.
//
// Usage: apidocs <crd-dir> <markdown-file>
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const (
	beginMarker = "<!-- BEGIN GENERATED REFERENCE (scripts/update-codegen.sh) -->"
	endMarker   = "<!-- END GENERATED REFERENCE -->"
)

// opaque fields are Kubernetes core types documented upstream; the
// reference names them instead of expanding hundreds of their fields.
var opaque = map[string]string{
	"extraContainers":          "[]core/v1 Container",
	"extraInitContainers":      "[]core/v1 Container",
	"resources":                "core/v1 ResourceRequirements",
	"podSecurityContext":       "core/v1 PodSecurityContext",
	"containerSecurityContext": "core/v1 SecurityContext",
	"conditions":               "[]meta/v1 Condition",
}

// kindOrder puts the central kind first.
var kindOrder = []string{"MysqlFailoverGroup", "MysqlBackup", "MysqlBackupVerification", "MysqlStandbyCluster", "MysqlDatabase"}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: apidocs <crd-dir> <markdown-file>")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run(crdDir, target string) error {
	crds, err := readCRDs(crdDir)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, kind := range kindOrder {
		crd, ok := crds[kind]
		if !ok {
			return fmt.Errorf("no CRD for kind %s in %s", kind, crdDir)
		}
		writeKind(&b, crd)
	}
	doc, err := os.ReadFile(target)
	if err != nil {
		return err
	}
	start := bytes.Index(doc, []byte(beginMarker))
	end := bytes.Index(doc, []byte(endMarker))
	if start < 0 || end < start {
		return fmt.Errorf("%s lacks the %q ... %q markers", target, beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(doc[:start+len(beginMarker)])
	out.WriteString("\n\n")
	out.Write(b.Bytes())
	out.Write(doc[end:])
	return os.WriteFile(target, out.Bytes(), 0o644)
}

func readCRDs(dir string) (map[string]*apiextv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "shipstream.io_*.yaml"))
	if err != nil {
		return nil, err
	}
	crds := map[string]*apiextv1.CustomResourceDefinition{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd apiextv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds[crd.Spec.Names.Kind] = &crd
	}
	return crds, nil
}

func writeKind(b *bytes.Buffer, crd *apiextv1.CustomResourceDefinition) {
	names := crd.Spec.Names
	v := crd.Spec.Versions[0]
	root := v.Schema.OpenAPIV3Schema
	fmt.Fprintf(b, "### %s\n\n", names.Kind)
	fmt.Fprintf(b, "`%s/%s`, namespaced, short name `%s`, plural `%s`.\n\n", crd.Spec.Group, v.Name, strings.Join(names.ShortNames, "`, `"), names.Plural)
	fmt.Fprintf(b, "%s\n\n", oneLine(root.Description))
	if len(root.XValidations) > 0 {
		b.WriteString("Object rules:\n\n")
		for _, r := range root.XValidations {
			fmt.Fprintf(b, "- %s\n", r.Message)
		}
		b.WriteString("\n")
	}
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	fmt.Fprintf(b, "`kubectl get %s` columns: %s.\n\n", names.ShortNames[0], strings.Join(cols, ", "))
	for _, part := range []string{"spec", "status"} {
		s, ok := root.Properties[part]
		if !ok {
			continue
		}
		fmt.Fprintf(b, "#### %s.%s\n\n", names.Kind, part)
		b.WriteString("| Field | Type | Default | Rules | Description |\n|---|---|---|---|---|\n")
		writeFields(b, part, &s, isRequired(root, part))
		b.WriteString("\n")
	}
}

func isRequired(parent *apiextv1.JSONSchemaProps, name string) bool {
	for _, r := range parent.Required {
		if r == name {
			return true
		}
	}
	return false
}

// writeFields writes one row for path and recurses into its fields.
func writeFields(b *bytes.Buffer, path string, s *apiextv1.JSONSchemaProps, required bool) {
	name := path[strings.LastIndex(path, ".")+1:]
	name = strings.TrimSuffix(name, "[]")
	typ := typeOf(s)
	if o, ok := opaque[name]; ok && path != "spec" && path != "status" {
		typ = o
	}
	fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", path, typ, defaultOf(s), cell(rules(s, required)), cell(oneLine(s.Description)))
	if _, ok := opaque[name]; ok {
		return
	}
	switch {
	case s.Type == "object" && len(s.Properties) > 0:
		for _, k := range sortedKeys(s.Properties) {
			child := s.Properties[k]
			writeFields(b, path+"."+k, &child, isRequired(s, k))
		}
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil && s.Items.Schema.Type == "object":
		item := s.Items.Schema
		for _, k := range sortedKeys(item.Properties) {
			child := item.Properties[k]
			writeFields(b, path+"[]."+k, &child, isRequired(item, k))
		}
	}
}

func sortedKeys(m map[string]apiextv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func typeOf(s *apiextv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int or string"
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return "[]" + typeOf(s.Items.Schema)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map[string]" + typeOf(s.AdditionalProperties.Schema)
	case s.Format == "date-time":
		return "timestamp"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

func defaultOf(s *apiextv1.JSONSchemaProps) string {
	if s.Default == nil {
		return ""
	}
	return "`" + string(s.Default.Raw) + "`"
}

// rules lists the admission checks of one schema node in plain words.
func rules(s *apiextv1.JSONSchemaProps, required bool) []string {
	var r []string
	if required {
		r = append(r, "required")
	}
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, strings.Trim(string(e.Raw), `"`))
		}
		r = append(r, "one of "+strings.Join(vals, ", "))
	}
	if s.Pattern != "" {
		r = append(r, "pattern `"+s.Pattern+"`")
	}
	if s.MinLength != nil {
		r = append(r, "min length "+strconv.FormatInt(*s.MinLength, 10))
	}
	if s.MaxLength != nil {
		r = append(r, "max length "+strconv.FormatInt(*s.MaxLength, 10))
	}
	if s.Minimum != nil {
		r = append(r, "≥ "+strconv.FormatFloat(*s.Minimum, 'f', -1, 64))
	}
	if s.Maximum != nil {
		r = append(r, "≤ "+strconv.FormatFloat(*s.Maximum, 'f', -1, 64))
	}
	if s.MinItems != nil {
		r = append(r, "min items "+strconv.FormatInt(*s.MinItems, 10))
	}
	if s.MaxItems != nil {
		r = append(r, "max items "+strconv.FormatInt(*s.MaxItems, 10))
	}
	if s.MaxProperties != nil {
		r = append(r, "max entries "+strconv.FormatInt(*s.MaxProperties, 10))
	}
	if s.XListType != nil {
		switch *s.XListType {
		case "map":
			r = append(r, "unique by "+strings.Join(s.XListMapKeys, "+"))
		case "set":
			r = append(r, "no duplicates")
		}
	}
	if s.Items != nil && s.Items.Schema != nil && s.Items.Schema.Type != "object" {
		item := rules(s.Items.Schema, false)
		if len(item) > 0 {
			r = append(r, "each item: "+strings.Join(item, ", "))
		}
	}
	for _, v := range s.XValidations {
		r = append(r, v.Message)
	}
	if s.Items != nil && s.Items.Schema != nil && s.Items.Schema.Type == "object" {
		for _, v := range s.Items.Schema.XValidations {
			r = append(r, "each item: "+v.Message)
		}
	}
	return r
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func cell(v any) string {
	var s string
	switch t := v.(type) {
	case []string:
		s = strings.Join(t, "; ")
	case string:
		s = t
	}
	return strings.ReplaceAll(s, "|", `\|`)
}
