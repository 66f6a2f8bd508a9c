package upload

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func s3Args() Args {
	return Args{
		StagingDir: "/staging", StoreType: StoreS3,
		S3Endpoint: "https://s3.example.test:9000", S3Region: "eu-west-1", S3Bucket: "backups", S3Prefix: "prod/orders",
		S3CredentialsDir: "/var/run/bloodraven/s3", S3CAFile: "/var/run/bloodraven/s3-ca/ca.crt", S3BucketLookup: S3BucketLookupPath,
		PassphraseFile: "/var/run/bloodraven/key/passphrase",
		BackupName:     "orders-nightly-1", BackupUID: "2b1f6c1e-8c1d-4f57-9f0e-7f9a3f1c2d44",
		GroupName: "orders", GroupUID: "0d8e7c6b-5a49-4837-a261-50f4e3d2c1b0", Attempt: 3,
	}
}

func pvcArgs() Args {
	return Args{
		StagingDir: "/staging", StoreType: StorePVC, PVCClaim: "orders-backups", PVCMountPath: "/backup", ResultFile: "/dev/termination-log",
		BackupName: "b", BackupUID: "6f1d2c3b-4a59-4e68-9d7c-8b6a5f4e3d2c", GroupName: "g", GroupUID: "7a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
	}
}

func TestArgvParseRoundTrip(t *testing.T) {
	for _, a := range []Args{s3Args(), pvcArgs(), func() Args { a := s3Args(); a.PassphraseFile, a.S3Endpoint = "", ""; return a }()} {
		argv := a.Argv()
		if argv[0] != Command {
			t.Fatalf("argv starts with %q, want %q", argv[0], Command)
		}
		got, err := Parse(argv)
		if err != nil {
			t.Fatalf("Parse(%q): %v", argv, err)
		}
		if !reflect.DeepEqual(got, a) {
			t.Errorf("Parse(Argv()) = %+v, want %+v", got, a)
		}
	}
}

// TestArgvNamesEveryField guards the round trip against a field added to
// Args without a flag: every string field set to a distinct value must come
// back from Parse(Argv()).
func TestArgvNamesEveryField(t *testing.T) {
	v := reflect.ValueOf(&Args{}).Elem()
	stringFields := 0
	for i := range v.NumField() {
		// AttemptEnv is written as --attempt's value, not a flag of its own.
		if v.Field(i).Kind() == reflect.String && v.Type().Field(i).Name != "AttemptEnv" {
			stringFields++
		}
	}
	if stringFields != len(stringFlags) {
		t.Fatalf("Args has %d string fields, stringFlags names %d", stringFields, len(stringFlags))
	}
	seen := map[string]bool{}
	for _, f := range stringFlags {
		if seen[f.name] {
			t.Errorf("flag --%s listed twice", f.name)
		}
		seen[f.name] = true
	}
	// Each flag must write its own field.
	for _, f := range stringFlags {
		var a Args
		*f.field(&a) = "x"
		n := 0
		av := reflect.ValueOf(a)
		for i := range av.NumField() {
			if av.Field(i).Kind() == reflect.String && av.Field(i).String() == "x" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("flag --%s sets %d fields", f.name, n)
		}
	}
}

// With AttemptEnv the attempt is Kubernetes' $(VAR) reference, and the
// command line the container gets once it is expanded parses to that
// number; an unexpanded reference (the variable missing) is refused.
func TestArgvAttemptFromTheEnvironment(t *testing.T) {
	a := s3Args()
	a.AttemptEnv = "BACKUP_ATTEMPT"
	argv := a.Argv()
	if last := argv[len(argv)-1]; last != "--attempt=$(BACKUP_ATTEMPT)" {
		t.Fatalf("last argument %q, want --attempt=$(BACKUP_ATTEMPT)", last)
	}
	expanded := slices.Clone(argv)
	expanded[len(expanded)-1] = strings.ReplaceAll(expanded[len(expanded)-1], "$(BACKUP_ATTEMPT)", "2")
	got, err := Parse(expanded)
	if err != nil || got.Attempt != 2 || got.AttemptEnv != "" {
		t.Fatalf("Parse(expanded) = %+v, %v; want attempt 2", got, err)
	}
	if _, err := Parse(argv); err == nil || !strings.Contains(err.Error(), "not a whole number") {
		t.Fatalf("the unexpanded reference parsed: %v", err)
	}
}

func TestParseRefuses(t *testing.T) {
	with := func(base Args, edit func(*Args)) []string { edit(&base); return base.Argv() }
	drop := func(argv []string, flag string) []string {
		return slices.DeleteFunc(slices.Clone(argv), func(s string) bool { return strings.HasPrefix(s, "--"+flag+"=") })
	}
	cases := []struct {
		name string
		argv []string
		want string // in the error
	}{
		{"no command", []string{"--staging-dir=/s"}, Command},
		{"other command", []string{"upload"}, Command},
		{"unknown flag", append(s3Args().Argv(), "--s3-insecure=true"), "s3-insecure"},
		{"positional", append(s3Args().Argv(), "extra"), `"extra"`},
		{"no attempt", drop(s3Args().Argv(), "attempt"), "--attempt"},
		{"attempt not a number", append(drop(s3Args().Argv(), "attempt"), "--attempt=two"), "--attempt"},
		{"negative attempt", with(s3Args(), func(a *Args) { a.Attempt = -1 }), "--attempt"},
		{"no staging dir", with(s3Args(), func(a *Args) { a.StagingDir = "" }), "--staging-dir"},
		{"relative staging dir", with(s3Args(), func(a *Args) { a.StagingDir = "staging" }), "--staging-dir"},
		{"unclean staging dir", with(s3Args(), func(a *Args) { a.StagingDir = "/staging/../etc" }), "--staging-dir"},
		{"no store type", with(s3Args(), func(a *Args) { a.StoreType = "" }), "--store-type"},
		{"bad store type", with(s3Args(), func(a *Args) { a.StoreType = "GCS" }), "--store-type"},
		{"no backup name", with(s3Args(), func(a *Args) { a.BackupName = "" }), "--backup-name"},
		{"backup name with slash", with(s3Args(), func(a *Args) { a.BackupName = "a/b" }), "--backup-name"},
		{"backup name dot-dot", with(s3Args(), func(a *Args) { a.BackupName = ".." }), "--backup-name"},
		{"no backup uid", with(s3Args(), func(a *Args) { a.BackupUID = "" }), "--backup-uid"},
		{"backup uid with slash", with(s3Args(), func(a *Args) { a.BackupUID = "x/../y" }), "--backup-uid"},
		{"backup uid not a UUID", with(s3Args(), func(a *Args) { a.BackupUID = "u-1" }), "--backup-uid"},
		{"group uid upper case", with(s3Args(), func(a *Args) { a.GroupUID = strings.ToUpper(a.GroupUID) }), "--group-uid"},
		{"no group name", with(s3Args(), func(a *Args) { a.GroupName = "" }), "--group-name"},
		{"no group uid", with(s3Args(), func(a *Args) { a.GroupUID = "" }), "--group-uid"},
		{"relative passphrase file", with(s3Args(), func(a *Args) { a.PassphraseFile = "key" }), "--passphrase-file"},
		{"no bucket", with(s3Args(), func(a *Args) { a.S3Bucket = "" }), "--s3-bucket"},
		{"no prefix", with(s3Args(), func(a *Args) { a.S3Prefix = "" }), "--s3-prefix"},
		{"prefix with empty segment", with(s3Args(), func(a *Args) { a.S3Prefix = "a//b" }), "--s3-prefix"},
		{"prefix with dot-dot", with(s3Args(), func(a *Args) { a.S3Prefix = "a/../b" }), "--s3-prefix"},
		{"endpoint without scheme", with(s3Args(), func(a *Args) { a.S3Endpoint = "s3.example.test" }), "--s3-endpoint"},
		{"no credentials dir", with(s3Args(), func(a *Args) { a.S3CredentialsDir = "" }), "--s3-credentials-dir"},
		{"relative CA file", with(s3Args(), func(a *Args) { a.S3CAFile = "ca.crt" }), "--s3-ca-file"},
		{"unknown bucket lookup", with(s3Args(), func(a *Args) { a.S3BucketLookup = "dns" }), "--s3-bucket-lookup"},
		{"bucket lookup on PVC", with(pvcArgs(), func(a *Args) { a.S3BucketLookup = S3BucketLookupPath }), "--s3-bucket-lookup"},
		{"PVC flag on S3", with(s3Args(), func(a *Args) { a.PVCMountPath = "/backup" }), "--pvc-mount-path"},
		{"S3 flags on PVC", with(pvcArgs(), func(a *Args) { a.S3Bucket, a.S3Region = "b", "r" }), "--s3-bucket, --s3-region"},
		{"no claim", with(pvcArgs(), func(a *Args) { a.PVCClaim = "" }), "--pvc-claim"},
		{"bad claim", with(pvcArgs(), func(a *Args) { a.PVCClaim = "Claim_1" }), "--pvc-claim"},
		{"no mount path", with(pvcArgs(), func(a *Args) { a.PVCMountPath = "" }), "--pvc-mount-path"},
		{"relative mount path", with(pvcArgs(), func(a *Args) { a.PVCMountPath = "backup" }), "--pvc-mount-path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.argv)
			if err == nil {
				t.Fatalf("Parse(%q) accepted it", c.argv)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%q) = %v, want an error naming %s", c.argv, err, c.want)
			}
		})
	}
}

func TestLayout(t *testing.T) {
	if got, want := AttemptDir("orders-nightly", "uid-1", 2), "orders-nightly-uid-1/2/"; got != want {
		t.Errorf("AttemptDir = %q, want %q", got, want)
	}
	if got, want := StampKey("b", "u", 0), "b-u/0/@.bloodraven-backup.json"; got != want {
		t.Errorf("StampKey = %q, want %q", got, want)
	}
	if got, want := DumpKey("b", "u", 1, "shop@orders@@0.tsv.zst"), "b-u/1/shop@orders@@0.tsv.zst"; got != want {
		t.Errorf("DumpKey = %q, want %q", got, want)
	}
}
