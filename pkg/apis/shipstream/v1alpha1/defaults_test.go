package v1alpha1

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/shipstream/bloodraven/pkg/protocol"
)

// fieldRef names a field by its Go struct type and Go field name.
type fieldRef struct{ Type, Field string }

func (r fieldRef) String() string { return r.Type + "." + r.Field }

// defaultConstants maps every field with a scalar +kubebuilder:default
// marker to the constant of defaults.go that restates it.
var defaultConstants = map[fieldRef]any{
	{"MysqlFailoverGroupSpec", "Image"}:                         DefaultImage,
	{"MysqlFailoverGroupSpec", "PollInterval"}:                  DefaultPollInterval,
	{"MysqlFailoverGroupSpec", "FailureThreshold"}:              DefaultFailureThreshold,
	{"MysqlFailoverGroupSpec", "RecoveryThreshold"}:             DefaultRecoveryThreshold,
	{"MysqlFailoverGroupSpec", "FailoverCooldown"}:              DefaultFailoverCooldown,
	{"MysqlFailoverGroupSpec", "ConnectionDrainTimeout"}:        DefaultConnectionDrainTimeout,
	{"MysqlFailoverGroupSpec", "CloneTimeout"}:                  DefaultCloneTimeout,
	{"MysqlFailoverGroupSpec", "TerminationGracePeriodSeconds"}: DefaultTerminationGracePeriodSeconds,
	{"SiteSpec", "Role"}:                                        DefaultSiteRole,
	{"DNSSpec", "TTLSeconds"}:                                   DefaultDNSTTLSeconds,
	{"ReplicationSpec", "MaxLagSeconds"}:                        DefaultMaxLagSeconds,
	{"UpdateStrategy", "Type"}:                                  DefaultUpdateStrategyType,
	{"SidecarSpec", "LeaseTimeout"}:                             DefaultLeaseTimeout,
	{"SidecarSpec", "PeerCheckInterval"}:                        DefaultPeerCheckInterval,
	{"PlannedFailoverSpec", "OnCooldown"}:                       DefaultPlannedFailoverOnCooldown,
	{"PlannedFailoverSpec", "MaxLagWait"}:                       DefaultMaxLagWait,
	{"PlannedFailoverSpec", "AdmissionTimeout"}:                 DefaultAdmissionTimeout,

	{"BackupSpec", "Image"}:                  DefaultBackupImage,
	{"BackupSpec", "MaxLagSecondsForSource"}: DefaultMaxLagSecondsForSource,
	{"BackupSpec", "ActiveDeadlineSeconds"}:  DefaultBackupActiveDeadlineSeconds,
	{"BackupSpec", "BackoffLimit"}:           DefaultBackupBackoffLimit,
	{"BackupRetention", "KeepLast"}:          DefaultBackupKeepLast,
	{"BackupRetention", "KeepFailed"}:        DefaultBackupKeepFailed,
	{"VerificationRetention", "KeepLast"}:    DefaultVerificationKeepLast,
	{"VerificationRetention", "KeepFailed"}:  DefaultVerificationKeepFailed,
	{"BackupRetrySpec", "MaxAttempts"}:       DefaultBackupRetryMaxAttempts,
	{"BackupRetrySpec", "InitialBackoff"}:    DefaultBackupRetryInitialBackoff,
	{"BackupRetrySpec", "MaxBackoff"}:        DefaultBackupRetryMaxBackoff,
	{"PITRSpec", "MaxBinlogSize"}:            DefaultMaxBinlogSize,
	{"PITRSpec", "ArchivePollInterval"}:      DefaultArchivePollInterval,

	{"DumpOptions", "Threads"}:                        DefaultDumpThreads,
	{"DumpOptions", "Compression"}:                    DefaultDumpCompression,
	{"DumpOptions", "Consistent"}:                     DefaultDumpConsistent,
	{"LoadOptions", "Threads"}:                        DefaultLoadThreads,
	{"LoadOptions", "LoadIndexes"}:                    DefaultLoadIndexes,
	{"BackupEncryptionSpec", "Algorithm"}:             DefaultEncryptionAlgorithm,
	{"PassphraseSecretKeySelector", "Key"}:            DefaultPassphraseKey,
	{"PasswordSecretKeySelector", "Key"}:              DefaultPasswordKey,
	{"SanityCheck", "Timeout"}:                        DefaultSanityCheckTimeout,
	{"DragonflySpec", "UpgradeStrategy"}:              DefaultDragonflyUpgradeStrategy,
	{"DragonflySpec", "Port"}:                         DefaultDragonflyPort,
	{"DragonflySpec", "AdminPort"}:                    DefaultDragonflyAdminPort,
	{"DragonflyPlannedFailoverSpec", "MaxSyncWait"}:   DefaultDragonflyMaxSyncWait,
	{"DragonflyPlannedFailoverSpec", "OnSyncTimeout"}: DefaultDragonflyOnSyncTimeout,

	{"EncryptionAtRestSpec", "ExistingData"}:       DefaultEncryptionExistingData,
	{"EncryptionCoverageSpec", "Tables"}:           DefaultCoverageTables,
	{"EncryptionCoverageSpec", "PrivilegeCheck"}:   DefaultCoveragePrivilegeCheck,
	{"EncryptionCoverageSpec", "RedoLog"}:          DefaultCoverageRedoLog,
	{"EncryptionCoverageSpec", "UndoLog"}:          DefaultCoverageUndoLog,
	{"EncryptionCoverageSpec", "BinaryLog"}:        DefaultCoverageBinaryLog,
	{"EncryptionCoverageSpec", "SystemTablespace"}: DefaultCoverageSystemTablespace,
	{"KeyringSpec", "DataFileDir"}:                 DefaultKeyringDataFileDir,
	{"KeyringSpec", "MysqldDir"}:                   DefaultKeyringMysqldDir,
	{"KeyringSpec", "PluginDir"}:                   DefaultKeyringPluginDir,
	{"KeyringSpec", "RetainVersions"}:              DefaultKeyringRetainVersions,
	{"KeyringSpec", "EscrowTimeout"}:               DefaultKeyringEscrowTimeout,

	{"MysqlBackupSpec", "DeletionPolicy"}:         DefaultBackupDeletionPolicy,
	{"MysqlStandbyClusterSpec", "Transport"}:      DefaultStandbyTransport,
	{"StandbyFreshnessSpec", "DiscoveryInterval"}: DefaultDiscoveryInterval,
	{"MysqlDatabaseSpec", "CharacterSet"}:         DefaultCharacterSet,
	{"MysqlDatabaseSpec", "DeletionPolicy"}:       DefaultDatabaseDeletionPolicy,
}

const defaultMarker = "+kubebuilder:default="

// defaultMarkerField is one field carrying a default marker.
type defaultMarkerField struct {
	ref    fieldRef
	value  string // the text after "default="
	goType string // the field's type, e.g. "*metav1.Duration"
	pos    token.Position
}

// markedFields parses *_types.go and returns every field with a default
// marker. It fails if a marker sits anywhere but on a struct field's doc
// comment, since such a marker would escape the table.
func markedFields(t *testing.T) []defaultMarkerField {
	t.Helper()
	files, err := filepath.Glob("*_types.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no *_types.go files: %v", err)
	}
	fset := token.NewFileSet()
	var out []defaultMarkerField
	total := 0
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		total += strings.Count(string(src), defaultMarker)
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fld := range st.Fields.List {
				if fld.Doc == nil {
					continue
				}
				for _, c := range fld.Doc.List {
					_, v, ok := strings.Cut(c.Text, defaultMarker)
					if !ok {
						continue
					}
					if len(fld.Names) != 1 {
						t.Errorf("%s: default marker on a field without exactly one name", fset.Position(c.Pos()))
						continue
					}
					out = append(out, defaultMarkerField{
						ref:    fieldRef{ts.Name.Name, fld.Names[0].Name},
						value:  strings.TrimSpace(v),
						goType: types.ExprString(fld.Type),
						pos:    fset.Position(c.Pos()),
					})
				}
			}
			return true
		})
	}
	if len(out) != total {
		t.Fatalf("found %d %q markers in *_types.go but only %d on struct fields", total, defaultMarker, len(out))
	}
	return out
}

// markerValue is the value a marker puts in the CRD: nil for an object or
// list default, else a string, an int64 or a bool.
func markerValue(s string) any {
	switch {
	case strings.HasPrefix(s, "{"), strings.HasPrefix(s, "["):
		return nil
	case strings.HasPrefix(s, `"`):
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if b, err := strconv.ParseBool(s); err == nil {
		return b
	}
	return s
}

var durationType = reflect.TypeOf(time.Duration(0))

// sameDefault reports whether v, as a CRD holds it (a string, an int64 or
// a bool), is the constant c.
func sameDefault(c, v any) error {
	cv := reflect.ValueOf(c)
	switch {
	case cv.Type() == durationType:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("constant is a duration (%s), default %v is not a string", time.Duration(cv.Int()), v)
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("default %q: %v", s, err)
		}
		if d != time.Duration(cv.Int()) {
			return fmt.Errorf("default %q is %s, constant is %s", s, d, time.Duration(cv.Int()))
		}
	case cv.CanInt():
		i, ok := v.(int64)
		if !ok || i != cv.Int() {
			return fmt.Errorf("default %#v, constant %d", v, cv.Int())
		}
	case cv.Kind() == reflect.Bool:
		b, ok := v.(bool)
		if !ok || b != cv.Bool() {
			return fmt.Errorf("default %#v, constant %t", v, cv.Bool())
		}
	case cv.Kind() == reflect.String:
		s, ok := v.(string)
		if !ok || s != cv.String() {
			return fmt.Errorf("default %#v, constant %q", v, cv.String())
		}
	default:
		return fmt.Errorf("constant of unsupported type %s", cv.Type())
	}
	return nil
}

// TestDefaultConstantsMatchMarkers checks defaults.go against the markers:
// every scalar default has a constant of the field's type and the same
// value, and every constant's marker still exists.
func TestDefaultConstantsMatchMarkers(t *testing.T) {
	seen := map[fieldRef]bool{}
	for _, m := range markedFields(t) {
		want := markerValue(m.value)
		if want == nil {
			continue // object defaults have no constant
		}
		if seen[m.ref] {
			t.Errorf("%s: %s has two default markers", m.pos, m.ref)
		}
		seen[m.ref] = true
		c, ok := defaultConstants[m.ref]
		if !ok {
			t.Errorf("%s: %s has default %s but no constant in defaults.go and defaultConstants", m.pos, m.ref, m.value)
			continue
		}
		// The constant's type is the field's (less the pointer);
		// metav1.Duration fields take a time.Duration.
		ct := reflect.TypeOf(c)
		if ft := strings.TrimPrefix(m.goType, "*"); ft == "metav1.Duration" {
			if ct != durationType {
				t.Errorf("%s: %s is a %s, its constant a %s, not a time.Duration", m.pos, m.ref, m.goType, ct)
			}
		} else if ct.Name() != ft || (ct.PkgPath() != "" && ct.PkgPath() != reflect.TypeOf(SiteSpec{}).PkgPath()) {
			t.Errorf("%s: %s is a %s, its constant a %s", m.pos, m.ref, m.goType, ct)
		}
		if err := sameDefault(c, want); err != nil {
			t.Errorf("%s: %s: %v", m.pos, m.ref, err)
		}
	}
	for _, ref := range sortedRefs(defaultConstants) {
		if !seen[ref] {
			t.Errorf("defaultConstants has %s, which has no scalar default marker", ref)
		}
	}
}

// TestDefaultConstantsMatchCRDs checks the generated manifests in
// deploy/crds against the table, walking each kind's Go type alongside its
// schema so that a field is known by its struct, as in the table.
func TestDefaultConstantsMatchCRDs(t *testing.T) {
	kinds := map[string]reflect.Type{}
	for _, o := range []any{MysqlFailoverGroup{}, MysqlBackup{}, MysqlBackupVerification{}, MysqlDatabase{}, MysqlStandbyCluster{}} {
		kinds[reflect.TypeOf(o).Name()] = reflect.TypeOf(o)
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "deploy", "crds", "shipstream.io_*.yaml"))
	if err != nil || len(files) != len(kinds) {
		t.Fatalf("want %d CRD manifests in deploy/crds, found %v (%v)", len(kinds), files, err)
	}
	seen := map[fieldRef]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		typ, ok := kinds[crd.Spec.Names.Kind]
		if !ok {
			t.Fatalf("%s: unknown kind %s", f, crd.Spec.Names.Kind)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != SchemeGroupVersion.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			walkSchema(t, filepath.Base(f)+": ", typ, *v.Schema.OpenAPIV3Schema, seen)
		}
	}
	for _, ref := range sortedRefs(defaultConstants) {
		if !seen[ref] {
			t.Errorf("no CRD in deploy/crds defaults %s (make generate?)", ref)
		}
	}
}

// walkSchema follows typ and its schema s together through the types of
// this package; the schemas of other packages' types carry their own
// defaults (corev1's), which are not ours to check.
func walkSchema(t *testing.T, path string, typ reflect.Type, s apiextv1.JSONSchemaProps, seen map[fieldRef]bool) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.Slice, reflect.Array:
		if s.Items != nil && s.Items.Schema != nil {
			walkSchema(t, path+"[]", typ.Elem(), *s.Items.Schema, seen)
		}
		return
	case reflect.Map:
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			walkSchema(t, path+"{}", typ.Elem(), *s.AdditionalProperties.Schema, seen)
		}
		return
	case reflect.Struct:
		if typ.PkgPath() != reflect.TypeOf(SiteSpec{}).PkgPath() {
			return
		}
	default:
		return
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && strings.Contains(opts, "inline") {
			walkSchema(t, path, f.Type, s, seen)
			continue
		}
		prop, ok := s.Properties[name]
		if name == "" || name == "-" || !ok {
			continue
		}
		at := path + "." + name
		if prop.Default != nil {
			var v any
			if err := json.Unmarshal(prop.Default.Raw, &v); err != nil {
				t.Errorf("%s: default %s: %v", at, prop.Default.Raw, err)
			}
			if n, ok := v.(float64); ok && n == float64(int64(n)) {
				v = int64(n)
			}
			switch v.(type) {
			case map[string]any, []any:
			default:
				ref := fieldRef{typ.Name(), f.Name}
				seen[ref] = true
				if c, ok := defaultConstants[ref]; !ok {
					t.Errorf("%s defaults to %s but %s has no entry in defaultConstants", at, prop.Default.Raw, ref)
				} else if err := sameDefault(c, v); err != nil {
					t.Errorf("%s (%s): %v", at, ref, err)
				}
			}
		}
		walkSchema(t, at, f.Type, prop, seen)
	}
}

// TestSidecarBinaryDefaults: package protocol keeps its own copy of the
// sidecar timers' defaults so the sidecar binary does not link the API
// types; they must be the CRD's.
func TestSidecarBinaryDefaults(t *testing.T) {
	if protocol.DefaultLeaseTimeout != DefaultLeaseTimeout || protocol.DefaultPeerCheckInterval != DefaultPeerCheckInterval {
		t.Errorf("protocol defaults %s/%s, CRD defaults %s/%s (leaseTimeout/peerCheckInterval)",
			protocol.DefaultLeaseTimeout, protocol.DefaultPeerCheckInterval, DefaultLeaseTimeout, DefaultPeerCheckInterval)
	}
}

func sortedRefs(m map[fieldRef]any) []fieldRef {
	out := make([]fieldRef, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
