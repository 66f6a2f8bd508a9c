package upload

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/backup/stamp"
)

// worlds are the stores every behaviour is checked on.
func worlds() []struct {
	name string
	make func(t *testing.T) *world
} {
	return []struct {
		name string
		make func(t *testing.T) *world
	}{
		{"PVC", dirWorld},
		{"S3", s3World},
	}
}

const testPassphrase = "Yq3v1u8mJk2L0cR7tX9wZ5bN4pS6dF1hG8jK3lM0qW2="

func TestRoundTrip(t *testing.T) {
	for _, w := range worlds() {
		for _, enc := range []struct{ name, passphrase string }{{"plain", ""}, {"encrypted", testPassphrase}} {
			t.Run(w.name+"/"+enc.name, func(t *testing.T) {
				wd := w.make(t)
				// The S3 store gets a chunk above its multipart threshold.
				f := writeDump(t, w.name == "S3")
				a, out, err := wd.run(t, f, step{attempt: 1, passphrase: enc.passphrase})
				if err != nil {
					t.Fatalf("upload: %v\n%s", err, out)
				}
				wd.checkStored(t, a, f, enc.passphrase)
				if !strings.Contains(out, "read back and verified") {
					t.Errorf("stderr does not report the verified upload:\n%s", out)
				}
			})
		}
	}
}

func TestOccupiedLocationRefusedUntouched(t *testing.T) {
	for _, w := range worlds() {
		t.Run(w.name+"/foreign object", func(t *testing.T) {
			wd := w.make(t)
			f := writeDump(t, false)
			a := wd.argsFor(t, f, step{attempt: 1})
			// Someone else's file in the location, under the name of one of
			// the dump's own files.
			put(t, wd, a, a.dumpKey("shop@orders@1.tsv.zst"), []byte("not this backup's"))
			checkRefusedUntouched(t, wd, f, step{attempt: 1})
		})
		t.Run(w.name+"/finished attempt", func(t *testing.T) {
			wd := w.make(t)
			f := writeDump(t, false)
			if _, out, err := wd.run(t, f, step{attempt: 1, passphrase: testPassphrase}); err != nil {
				t.Fatalf("first upload: %v\n%s", err, out)
			}
			// The same attempt again (a retried pod with the same
			// arguments), from a dump that has since changed.
			checkRefusedUntouched(t, wd, writeDump(t, false), step{attempt: 1, passphrase: testPassphrase})
		})
	}
}

// checkRefusedUntouched runs the step into an occupied location and checks
// it failed saying so, with every object of the store as it was.
func checkRefusedUntouched(t *testing.T, wd *world, f dumpFixture, s step) {
	t.Helper()
	before := wd.snapshot(t)
	_, out, err := wd.run(t, f, s)
	if err == nil || !strings.Contains(err.Error(), "occupied") {
		t.Fatalf("upload into an occupied location: %v, want an 'occupied' refusal\n%s", err, out)
	}
	after := wd.snapshot(t)
	if len(after) != len(before) {
		t.Errorf("the store held %d objects, now %d", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed", k)
		}
	}
}

// put stores one object through a store of its own, as another writer.
func put(t *testing.T, wd *world, a Args, key string, data []byte) {
	t.Helper()
	st, err := wd.open(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(context.Background(), key, strings.NewReader(string(data)), int64(len(data))); err != nil {
		t.Fatal(err)
	}
}

func TestAttemptsHaveTheirOwnLocations(t *testing.T) {
	for _, w := range worlds() {
		t.Run(w.name, func(t *testing.T) {
			wd := w.make(t)
			f1, f2 := writeDump(t, false), writeDump(t, false)
			a1, out, err := wd.run(t, f1, step{attempt: 1})
			if err != nil {
				t.Fatalf("attempt 1: %v\n%s", err, out)
			}
			first := wd.snapshot(t)
			a2, out, err := wd.run(t, f2, step{attempt: 2, passphrase: testPassphrase})
			if err != nil {
				t.Fatalf("attempt 2: %v\n%s", err, out)
			}
			wd.checkStored(t, a1, f1, "")
			wd.checkStored(t, a2, f2, testPassphrase)
			after := wd.snapshot(t)
			for k, v := range first {
				if after[k] != v {
					t.Errorf("attempt 2 changed attempt 1's %s", k)
				}
			}
		})
	}
}

func TestReadBackCatchesTamperedObject(t *testing.T) {
	for _, w := range worlds() {
		for _, c := range []struct {
			name   string
			change func(wd *world, t *testing.T, key string)
			want   error
		}{
			{"flipped byte", func(wd *world, t *testing.T, key string) { wd.tamper(t, key) }, stamp.ErrMismatch},
			{"removed", func(wd *world, t *testing.T, key string) { wd.remove(t, key) }, objstore.ErrNotFound},
		} {
			t.Run(w.name+"/"+c.name, func(t *testing.T) {
				wd := w.make(t)
				f := writeDump(t, false)
				a := wd.argsFor(t, f, step{attempt: 1})
				victim := a.dumpKey("shop@orders@1.tsv.zst")
				// Between the stamp's write and its read-back, a stored
				// object changes behind the store's back.
				_, out, err := wd.run(t, f, step{attempt: 1, afterCreate: func(key string) {
					if key == a.stampKey() {
						c.change(wd, t, victim)
					}
				}})
				if !errors.Is(err, c.want) {
					t.Fatalf("upload with %s %s: %v, want %v\n%s", victim, c.name, err, c.want, out)
				}
				if !strings.Contains(err.Error(), victim) {
					t.Errorf("the error does not name %s: %v", victim, err)
				}
			})
		}
	}
}

func TestIncompleteDumpRefused(t *testing.T) {
	for _, w := range worlds() {
		t.Run(w.name, func(t *testing.T) {
			wd := w.make(t)
			f := writeDump(t, false)
			if err := os.Remove(filepath.Join(f.dir, "@.done.json")); err != nil {
				t.Fatal(err)
			}
			before := wd.snapshot(t)
			_, out, err := wd.run(t, f, step{attempt: 1})
			if err == nil || !strings.Contains(err.Error(), "incomplete") {
				t.Fatalf("upload of a dump without @.done.json: %v, want an 'incomplete' refusal\n%s", err, out)
			}
			if after := wd.snapshot(t); len(after) != len(before) {
				t.Errorf("the store held %d objects, now %d: %q", len(before), len(after), wd.keys(t))
			}
		})
	}
}

func TestMissingPassphraseFileStoresNothing(t *testing.T) {
	wd := dirWorld(t)
	f := writeDump(t, false)
	a := wd.argsFor(t, f, step{attempt: 1})
	a.PassphraseFile = filepath.Join(t.TempDir(), "absent")
	err := run(context.Background(), a, io.Discard, wd.open)
	if err == nil || !strings.Contains(err.Error(), "passphrase") {
		t.Fatalf("upload with a missing passphrase file: %v, want an error about the passphrase", err)
	}
	if keys := wd.keys(t); len(keys) > 0 {
		t.Errorf("the store holds %q", keys)
	}
}

// TestPVCNotMountedFailsAtStart runs the public Run, whose PVC store
// requires a mount point: a plain directory is refused before anything is
// written to it.
func TestPVCNotMountedFailsAtStart(t *testing.T) {
	wd := dirWorld(t)
	f := writeDump(t, false)
	a := wd.argsFor(t, f, step{attempt: 1, passphrase: testPassphrase})
	err := Run(context.Background(), a, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not a mount point") {
		t.Fatalf("upload to a PVC path that is not a mount point: %v, want a 'not a mount point' refusal", err)
	}
	if keys := wd.keys(t); len(keys) > 0 {
		t.Errorf("the directory holds %q", keys)
	}
}

// TestPVCOnAMountPoint runs the public Run on a real mount point: the
// machine's /dev/shm (a tmpfs), in a location of its own that it removes.
func TestPVCOnAMountPoint(t *testing.T) {
	const root = "/dev/shm"
	if !isMountPoint(t, root) {
		t.Skip(root + " is not a mount point on this machine")
	}
	uid := randomUUID(t)
	wd := fileWorld(t, root, Args{StoreType: StorePVC, PVCClaim: "shm", PVCMountPath: root},
		func(a Args) (objstore.Store, error) { return openStore(a, true) })
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(root, testBackupName+"-"+uid)) })
	f := writeDump(t, false)
	a := wd.argsFor(t, f, step{attempt: 1, passphrase: testPassphrase, backupUID: uid})
	if err := Run(context.Background(), a, io.Discard); err != nil {
		t.Fatalf("upload to %s: %v", root, err)
	}
	wd.checkStored(t, a, f, testPassphrase)
}

// TestRacingWritersNeverMix runs two steps with different dumps into the
// same location at once. Create never overwrites, so at most one finishes;
// whichever stamp exists verifies against the store and its objects are
// all that one writer's dump.
func TestRacingWritersNeverMix(t *testing.T) {
	for _, w := range worlds() {
		t.Run(w.name, func(t *testing.T) {
			wd := w.make(t)
			dumps := []dumpFixture{writeDump(t, false), writeDump(t, false)}
			errs := make([]error, 2)
			var args [2]Args
			var wg sync.WaitGroup
			for i := range dumps {
				args[i] = wd.argsFor(t, dumps[i], step{attempt: 1})
				wg.Go(func() { errs[i] = run(context.Background(), args[i], io.Discard, wd.open) })
			}
			wg.Wait()
			if errs[0] == nil && errs[1] == nil {
				t.Fatal("both writers finished in the same location")
			}
			for i, err := range errs {
				if err == nil {
					wd.checkStored(t, args[i], dumps[i], "")
				} else if !errors.Is(err, objstore.ErrExists) && !strings.Contains(err.Error(), "occupied") {
					t.Errorf("writer %d: %v, want an 'occupied' refusal or ErrExists", i, err)
				}
			}
		})
	}
}

func TestNoSecretInOutput(t *testing.T) {
	wd := s3World(t)
	f := writeDump(t, false)
	a := wd.argsFor(t, f, step{attempt: 1, passphrase: testPassphrase})
	access, secret := readCreds(t, a)
	secrets := []string{testPassphrase, access, secret}
	var out strings.Builder
	err := run(context.Background(), a, &out, wd.open)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	// A failing run: the secret key is wrong.
	bad := a
	bad.Attempt = 2
	bad.S3CredentialsDir = t.TempDir()
	writeFile(t, filepath.Join(bad.S3CredentialsDir, AccessKeyFile), access)
	wrong := "wrong-" + secret
	writeFile(t, filepath.Join(bad.S3CredentialsDir, SecretKeyFile), wrong)
	err = run(context.Background(), bad, &out, wd.open)
	if err == nil {
		t.Fatal("upload with a wrong secret key succeeded")
	}
	text := out.String() + "\n" + err.Error()
	for _, s := range append(secrets, wrong) {
		if strings.Contains(text, s) {
			t.Errorf("the step's output shows a secret:\n%s", text)
		}
	}
	t.Logf("the refusal reads: %v", err)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFailedUploadLeavesNoStamp: when a file cannot be stored (here another
// writer takes @.done.json's key while the step runs), the step fails naming
// it and no stamp exists: only a whole backup is ever stamped.
func TestFailedUploadLeavesNoStamp(t *testing.T) {
	for _, w := range worlds() {
		t.Run(w.name, func(t *testing.T) {
			wd := w.make(t)
			f := writeDump(t, false)
			a := wd.argsFor(t, f, step{attempt: 1})
			done := a.dumpKey("@.done.json")
			var once sync.Once
			_, out, err := wd.run(t, f, step{attempt: 1, afterCreate: func(string) {
				once.Do(func() { put(t, wd, a, done, []byte(`{"someone":"else"}`)) })
			}})
			if !errors.Is(err, objstore.ErrExists) || !strings.Contains(err.Error(), "@.done.json") {
				t.Fatalf("upload racing another writer of @.done.json: %v, want ErrExists naming it\n%s", err, out)
			}
			if b := wd.read(t, a.stampKey()); b != nil {
				t.Errorf("a stamp exists after a failed upload:\n%s", b)
			}
		})
	}
}

// TestCreateOrder: the dump's @.done.json is the last dump file stored and
// the stamp the last object of all, so a partial upload never looks like a
// finished dump, and never carries a stamp.
func TestCreateOrder(t *testing.T) {
	wd := dirWorld(t)
	f := writeDump(t, false)
	var created []string
	a, out, err := wd.run(t, f, step{attempt: 1, afterCreate: func(key string) { created = append(created, key) }})
	if err != nil {
		t.Fatalf("upload: %v\n%s", err, out)
	}
	n := len(created)
	if n != len(f.files)+1 || created[n-1] != a.stampKey() || created[n-2] != a.dumpKey("@.done.json") {
		t.Errorf("objects created in the order %q, want every dump file, then @.done.json, then the stamp", created)
	}
}

// TestFileChangedWhileStoredFails: a staging file that grows after the step
// sized it (an output directory still being written) fails the step naming
// the file, in plaintext and through the envelope, and leaves no stamp.
func TestFileChangedWhileStoredFails(t *testing.T) {
	for _, w := range worlds() {
		for _, passphrase := range []string{"", testPassphrase} {
			t.Run(w.name+"/encrypted="+strconv.FormatBool(passphrase != ""), func(t *testing.T) {
				wd := w.make(t)
				f := writeDump(t, false)
				a := wd.argsFor(t, f, step{attempt: 1})
				const name = "shop@orders@1.tsv.zst"
				_, out, err := wd.run(t, f, step{attempt: 1, passphrase: passphrase, beforeCreate: func(key string) {
					if key == a.dumpKey(name) {
						appendTo(t, filepath.Join(f.dir, name), []byte("late row\n"))
					}
				}})
				if err == nil || !strings.Contains(err.Error(), name) {
					t.Fatalf("upload of a growing file: %v, want an error naming %s\n%s", err, name, out)
				}
				if b := wd.read(t, a.stampKey()); b != nil {
					t.Errorf("a stamp exists after a failed upload")
				}
				t.Logf("the refusal reads: %v", err)
			})
		}
	}
}

func appendTo(t *testing.T, path string, data []byte) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestBadInputSaysWhat: each wrong setting of an S3 step fails before
// anything is stored, with an error that names what is wrong.
func TestBadInputSaysWhat(t *testing.T) {
	wd := s3World(t)
	f := writeDump(t, false)
	cases := []struct {
		name string
		edit func(t *testing.T, a *Args)
		want string
	}{
		{"credentials not mounted", func(t *testing.T, a *Args) { a.S3CredentialsDir = filepath.Join(t.TempDir(), "absent") }, AccessKeyFile},
		{"empty secret key", func(t *testing.T, a *Args) {
			access, _ := readCreds(t, *a)
			a.S3CredentialsDir = t.TempDir()
			writeFile(t, filepath.Join(a.S3CredentialsDir, AccessKeyFile), access)
			writeFile(t, filepath.Join(a.S3CredentialsDir, SecretKeyFile), "\n")
		}, "secret key file " + "%DIR%/" + SecretKeyFile + " is empty"},
		{"unknown access key", func(t *testing.T, a *Args) {
			_, secret := readCreds(t, *a)
			a.S3CredentialsDir = t.TempDir()
			writeFile(t, filepath.Join(a.S3CredentialsDir, AccessKeyFile), "AKNOBODY")
			writeFile(t, filepath.Join(a.S3CredentialsDir, SecretKeyFile), secret)
		}, "access key"},
		{"no such bucket", func(t *testing.T, a *Args) { a.S3Bucket = "not-there" }, "not-there"},
		{"CA bundle not mounted", func(t *testing.T, a *Args) { a.S3CAFile = filepath.Join(t.TempDir(), "ca.crt") }, "CA bundle"},
		{"passphrase file empty", func(t *testing.T, a *Args) {
			a.PassphraseFile = filepath.Join(t.TempDir(), "passphrase")
			writeFile(t, a.PassphraseFile, " \n")
		}, "passphrase"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := wd.argsFor(t, f, step{attempt: 1})
			c.edit(t, &a)
			before := wd.snapshot(t)
			err := run(context.Background(), a, io.Discard, wd.open)
			want := strings.ReplaceAll(c.want, "%DIR%", a.S3CredentialsDir)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want an error containing %q", err, want)
			}
			if after := wd.snapshot(t); len(after) != len(before) {
				t.Errorf("the store held %d objects, now %d", len(before), len(after))
			}
			t.Logf("%s: %v", c.name, err)
		})
	}
}
