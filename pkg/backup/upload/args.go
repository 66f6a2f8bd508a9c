package upload

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/shipstream/bloodraven/pkg/backup/objstore"
)

// Command is the subcommand of the Bloodraven binary that runs this step;
// Argv starts with it and Parse expects it.
const Command = "encrypt-upload"

// Store types, as the profile's storage.type spells them.
const (
	StoreS3  = "S3"
	StorePVC = "PVC"
	// S3BucketLookupPath is --s3-bucket-lookup for a profile with forcePathStyle.
	S3BucketLookupPath = "path"
)

// The files of the mounted S3 credentials Secret (S3CredentialsDir).
const (
	AccessKeyFile = "accessKeyId"
	SecretKeyFile = "secretAccessKey"
)

// Args is the step's whole configuration. It holds only names and file
// paths: every secret (S3 keys, the passphrase, a CA) is read from a mounted
// file, so nothing secret ever reaches the container's argv, the Job's spec
// or a log line.
type Args struct {
	StagingDir string // the dump directory mysqlsh wrote (the staging emptyDir)
	StoreType  string // StoreS3 or StorePVC

	S3Endpoint       string // http(s) URL; empty is AWS S3
	S3Region         string
	S3Bucket         string
	S3Prefix         string // the profile's prefix (objstore.ValidatePrefix)
	S3CredentialsDir string // mounted Secret with AccessKeyFile and SecretKeyFile
	S3CAFile         string // PEM bundle trusted for the endpoint; empty: system roots
	// S3BucketLookup is S3BucketLookupPath for the profile's forcePathStyle; empty lets the
	// client choose (objstore.S3Config.PathStyle).
	S3BucketLookup string

	PVCClaim     string // the claim's name, for locations
	PVCMountPath string // where the claim is mounted; must be a mount point

	PassphraseFile string // mounted key snapshot; empty = no encryption

	// ResultFile, when set, is where the step writes its Result once the
	// stamp is verified: the container's terminationMessagePath, which the
	// kubelet hands to the operator as the container's termination message.
	ResultFile string

	BackupName, BackupUID string
	GroupName, GroupUID   string
	Attempt               int // this attempt's number: its own location under the backup

	// AttemptEnv, when set, makes Argv write --attempt=$(AttemptEnv)
	// instead of Attempt: Kubernetes expands it from the container's
	// environment, so that each pod of a Job (a retry included) gets its
	// own number. Parse never sets it: it reads the expanded number.
	AttemptEnv string
}

// flagSpec ties one flag to its field, in the order Argv writes them.
type flagSpec struct {
	name  string
	field func(*Args) *string
}

var stringFlags = []flagSpec{
	{"staging-dir", func(a *Args) *string { return &a.StagingDir }},
	{"store-type", func(a *Args) *string { return &a.StoreType }},
	{"s3-endpoint", func(a *Args) *string { return &a.S3Endpoint }},
	{"s3-region", func(a *Args) *string { return &a.S3Region }},
	{"s3-bucket", func(a *Args) *string { return &a.S3Bucket }},
	{"s3-prefix", func(a *Args) *string { return &a.S3Prefix }},
	{"s3-credentials-dir", func(a *Args) *string { return &a.S3CredentialsDir }},
	{"s3-ca-file", func(a *Args) *string { return &a.S3CAFile }},
	{"s3-bucket-lookup", func(a *Args) *string { return &a.S3BucketLookup }},
	{"pvc-claim", func(a *Args) *string { return &a.PVCClaim }},
	{"pvc-mount-path", func(a *Args) *string { return &a.PVCMountPath }},
	{"passphrase-file", func(a *Args) *string { return &a.PassphraseFile }},
	{"result-file", func(a *Args) *string { return &a.ResultFile }},
	{"backup-name", func(a *Args) *string { return &a.BackupName }},
	{"backup-uid", func(a *Args) *string { return &a.BackupUID }},
	{"group-name", func(a *Args) *string { return &a.GroupName }},
	{"group-uid", func(a *Args) *string { return &a.GroupUID }},
}

const attemptFlag = "attempt"

// Argv is the container's args for the Bloodraven image: the subcommand,
// then one --flag=value per set field (empty strings are left out, the
// attempt is always written, as $(AttemptEnv) when that is set).
// Parse(a.Argv()) gives a back, once Kubernetes has expanded $(AttemptEnv).
func (a Args) Argv() []string {
	argv := []string{Command}
	for _, f := range stringFlags {
		if v := *f.field(&a); v != "" {
			argv = append(argv, "--"+f.name+"="+v)
		}
	}
	attempt := strconv.Itoa(a.Attempt)
	if a.AttemptEnv != "" {
		attempt = "$(" + a.AttemptEnv + ")"
	}
	return append(argv, "--"+attemptFlag+"="+attempt)
}

// Parse reads the step's command line, Command first. An unknown flag, a
// positional argument, a missing required flag or an invalid value is an
// error.
func Parse(argv []string) (Args, error) {
	if len(argv) == 0 || argv[0] != Command {
		return Args{}, fmt.Errorf("the command line must start with %q", Command)
	}
	var a Args
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error is returned, and says it all
	for _, f := range stringFlags {
		fs.StringVar(f.field(&a), f.name, "", "")
	}
	attempt := fs.String(attemptFlag, "", "")
	if err := fs.Parse(argv[1:]); err != nil {
		return Args{}, err
	}
	if fs.NArg() > 0 {
		return Args{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *attempt == "" {
		return Args{}, errors.New("--attempt is required")
	}
	n, err := strconv.Atoi(*attempt)
	if err != nil {
		return Args{}, fmt.Errorf("--attempt %q is not a whole number", *attempt)
	}
	a.Attempt = n
	return a, a.Validate()
}

var (
	// A Kubernetes object name (DNS subdomain, and the v1.7.0 cap of 63
	// characters for backups); never "/" or "..", so it stays one key segment.
	namePattern = regexp.MustCompile(`^[a-z0-9]([-.a-z0-9]{0,61}[a-z0-9])?$`)
	// A PersistentVolumeClaim name (DNS subdomain; length checked apart).
	subdomainPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// A Kubernetes UID: a UUID, of fixed length, so that <name>-<uid> can
	// only be read one way and two backups never share a location.
	uidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// Validate reports the first thing wrong with a, naming its flag.
func (a Args) Validate() error {
	if err := a.validateIdentity(); err != nil {
		return err
	}
	if err := absolute("staging-dir", a.StagingDir); err != nil {
		return err
	}
	switch a.StoreType {
	case StoreS3:
		return a.validateS3()
	case StorePVC:
		return a.validatePVC()
	case "":
		return errors.New("--store-type is required (S3 or PVC)")
	default:
		return fmt.Errorf("--store-type %q is neither S3 nor PVC", a.StoreType)
	}
}

func (a Args) validateIdentity() error {
	for _, f := range []struct{ flag, v string }{{"backup-name", a.BackupName}, {"group-name", a.GroupName}} {
		if f.v == "" {
			return fmt.Errorf("--%s is required", f.flag)
		}
		if !namePattern.MatchString(f.v) {
			return fmt.Errorf("--%s %q is not an object name (lowercase DNS subdomain, at most 63 characters)", f.flag, f.v)
		}
	}
	for _, f := range []struct{ flag, v string }{{"backup-uid", a.BackupUID}, {"group-uid", a.GroupUID}} {
		if f.v == "" {
			return fmt.Errorf("--%s is required", f.flag)
		}
		if !uidPattern.MatchString(f.v) {
			return fmt.Errorf("--%s %q is not an object UID (a lower-case UUID)", f.flag, f.v)
		}
	}
	if a.Attempt < 0 {
		return fmt.Errorf("--attempt %d is negative", a.Attempt)
	}
	if a.PassphraseFile != "" {
		if err := absolute("passphrase-file", a.PassphraseFile); err != nil {
			return err
		}
	}
	if a.ResultFile != "" {
		return absolute("result-file", a.ResultFile)
	}
	return nil
}

func (a Args) validateS3() error {
	if err := unset(StoreS3, map[string]string{"pvc-claim": a.PVCClaim, "pvc-mount-path": a.PVCMountPath}); err != nil {
		return err
	}
	if a.S3Bucket == "" {
		return errors.New("--s3-bucket is required for an S3 store")
	}
	if a.S3Prefix == "" {
		return errors.New("--s3-prefix is required for an S3 store")
	}
	if err := objstore.ValidatePrefix(a.S3Prefix); err != nil {
		return fmt.Errorf("--s3-prefix: %w", err)
	}
	if a.S3Endpoint != "" {
		u, err := url.Parse(a.S3Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--s3-endpoint %q is not an http:// or https:// URL with a host", a.S3Endpoint)
		}
	}
	if a.S3CredentialsDir == "" {
		return errors.New("--s3-credentials-dir is required for an S3 store (the mounted Secret with " + AccessKeyFile + " and " + SecretKeyFile + ")")
	}
	if err := absolute("s3-credentials-dir", a.S3CredentialsDir); err != nil {
		return err
	}
	if a.S3BucketLookup != "" && a.S3BucketLookup != S3BucketLookupPath {
		return fmt.Errorf("--s3-bucket-lookup %q is not %q (leave it out to let the client choose)", a.S3BucketLookup, S3BucketLookupPath)
	}
	if a.S3CAFile != "" {
		return absolute("s3-ca-file", a.S3CAFile)
	}
	return nil
}

func (a Args) validatePVC() error {
	if err := unset(StorePVC, map[string]string{
		"s3-endpoint": a.S3Endpoint, "s3-region": a.S3Region, "s3-bucket": a.S3Bucket, "s3-prefix": a.S3Prefix,
		"s3-credentials-dir": a.S3CredentialsDir, "s3-ca-file": a.S3CAFile, "s3-bucket-lookup": a.S3BucketLookup,
	}); err != nil {
		return err
	}
	if a.PVCClaim == "" {
		return errors.New("--pvc-claim is required for a PVC store")
	}
	if len(a.PVCClaim) > 253 || !subdomainPattern.MatchString(a.PVCClaim) {
		return fmt.Errorf("--pvc-claim %q is not a claim name", a.PVCClaim)
	}
	if a.PVCMountPath == "" {
		return errors.New("--pvc-mount-path is required for a PVC store")
	}
	return absolute("pvc-mount-path", a.PVCMountPath)
}

// unset refuses the flags of the other store type, so a half-edited Job
// never silently ignores a setting.
func unset(storeType string, flags map[string]string) error {
	var set []string
	for name, v := range flags {
		if v != "" {
			set = append(set, "--"+name)
		}
	}
	if len(set) > 0 {
		return fmt.Errorf("%s do not apply to a %s store", strings.Join(slices.Sorted(slices.Values(set)), ", "), storeType)
	}
	return nil
}

func absolute(flagName, path string) error {
	if path == "" {
		return fmt.Errorf("--%s is required", flagName)
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return fmt.Errorf("--%s %q must be a clean absolute path", flagName, path)
	}
	return nil
}
