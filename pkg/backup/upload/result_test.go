package upload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/stamp"
)

// resultStep runs the step on the directory store with --result-file and
// returns the file's path.
func resultStep(t *testing.T, wd *world, f dumpFixture, passphrase string) (Args, string, error) {
	t.Helper()
	resultFile := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(resultFile, nil, 0o644); err != nil { // the kubelet creates it empty
		t.Fatal(err)
	}
	a := wd.argsFor(t, f, step{attempt: 2, passphrase: passphrase})
	a.ResultFile = resultFile
	var stderr bytes.Buffer
	err := run(t.Context(), a, &stderr, wd.open)
	return a, resultFile, err
}

// TestResultFileNamesTheVerifiedStamp: after a stored, verified attempt the
// result file holds a strict result whose every field is what the stamp on
// disk says (read from the directory, not through the store), the stamp's
// SHA-256 that of the bytes on disk, and it fits a termination message.
func TestResultFileNamesTheVerifiedStamp(t *testing.T) {
	for _, passphrase := range []string{"", testPassphrase} {
		wd := dirWorld(t)
		f := writeDump(t, false)
		a, resultFile, err := resultStep(t, wd, f, passphrase)
		if err != nil {
			t.Fatalf("upload: %v", err)
		}
		wd.checkStored(t, a, f, passphrase)
		data, err := os.ReadFile(resultFile)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > MaxResultBytes || bytes.ContainsRune(data, '\n') {
			t.Errorf("result of %d bytes (want compact, at most %d): %s", len(data), MaxResultBytes, data)
		}
		r, err := DecodeResult(data)
		if err != nil {
			t.Fatalf("the result file does not decode: %v\n%s", err, data)
		}
		onDisk := wd.read(t, a.stampKey())
		st, err := stamp.Decode(onDisk)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(onDisk)
		var size int64
		for _, fl := range st.Files {
			size += fl.Size
		}
		want := Result{Backup: st.Backup, Group: st.Group, Attempt: 2, Encryption: st.Encryption,
			Stamp:        StampRef{Location: "pvc://orders-backups/" + a.stampKey(), SHA256: hex.EncodeToString(sum[:])},
			GTIDExecuted: fixtureGTID, BinlogPosition: stamp.BinlogPosition{File: fixtureBinlogFile, Position: fixtureBinlogPos},
			SizeBytes: size, Files: len(st.Files)}
		if r != want {
			t.Errorf("result\n %+v\nwant (from the stamp on disk)\n %+v", r, want)
		}
		if st.Backup.UID != a.BackupUID || st.Attempt != 2 {
			t.Errorf("the stamp on disk is not this attempt's: %+v", st)
		}
	}
}

// TestResultTooLargeStoresNothing: a dump whose GTID set would make the
// result longer than a termination message is refused before anything is
// stored, saying why; the result file stays empty.
func TestResultTooLargeStoresNothing(t *testing.T) {
	wd := dirWorld(t)
	f := writeDump(t, false)
	var uuids []string
	for i := range 120 { // 120 UUIDs of ~42 bytes each: ~5 KB
		uuids = append(uuids, fmt.Sprintf("%08x-71ca-11e1-9e33-c80aa9429562:1-%d", i, 1000+i))
	}
	setDumpGTID(t, f, strings.Join(uuids, ","))
	_, resultFile, err := resultStep(t, wd, f, "")
	if !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), "nothing was stored") {
		t.Fatalf("upload of a dump with a %d-byte GTID set: %v, want a refusal saying nothing was stored", len(strings.Join(uuids, ",")), err)
	}
	if keys := wd.keys(t); len(keys) > 0 {
		t.Errorf("the store holds %q after the refusal", keys)
	}
	if data, _ := os.ReadFile(resultFile); len(data) != 0 {
		t.Errorf("the result file holds %q", data)
	}
	// The same dump without --result-file (an S3 profile) is stored: only
	// the termination message limits it.
	if _, out, err := wd.run(t, f, step{attempt: 0}); err != nil {
		t.Fatalf("without --result-file: %v\n%s", err, out)
	}
}

// setDumpGTID rewrites the dump's @.json with another gtidExecuted.
func setDumpGTID(t *testing.T, f dumpFixture, set string) {
	t.Helper()
	path := filepath.Join(f.dir, "@.json")
	var doc map[string]any
	if err := json.Unmarshal(f.files["@.json"], &doc); err != nil {
		t.Fatal(err)
	}
	doc["gtidExecuted"] = set
	f.files["@.json"] = mustJSON(t, doc)
	if err := os.WriteFile(path, f.files["@.json"], 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeResultIsStrict: only a whole, well-formed result of this
// version decodes; a termination message cut short, with an added field,
// trailing data, another version or a missing field is refused.
func TestDecodeResultIsStrict(t *testing.T) {
	good := Result{Backup: stamp.Object{Name: "b", UID: "u"}, Group: stamp.Object{Name: "g", UID: "v"}, Attempt: 1, Encryption: "none",
		Stamp:        StampRef{Location: "pvc://c/b-u/1/" + stamp.Name, SHA256: strings.Repeat("ab", 32)},
		GTIDExecuted: fixtureGTID, BinlogPosition: stamp.BinlogPosition{File: "binlog.000001", Position: 4}, SizeBytes: 10, Files: 2}
	data, err := EncodeResult(good)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := DecodeResult(data); err != nil || r != good {
		t.Fatalf("round trip: %+v, %v", r, err)
	}
	s := string(data)
	for name, bad := range map[string]string{
		"cut short":      s[:len(s)/2],
		"empty":          "",
		"a log line":     "encrypt-upload: failed: boom",
		"unknown field":  strings.Replace(s, `"attempt":1`, `"attempt":1,"extra":true`, 1),
		"trailing data":  s + `{}`,
		"version 2":      strings.Replace(s, `"version":1`, `"version":2`, 1),
		"no version":     strings.Replace(s, `"version":1,`, ``, 1),
		"no stamp sum":   strings.Replace(s, good.Stamp.SHA256, "", 1),
		"no files":       strings.Replace(s, `"files":2`, `"files":0`, 1),
		"non-canonical":  strings.Replace(s, fixtureGTID, "8a94f357-aab4-11df-86ab-c80aa9429562:1-5,3e11fa47-71ca-11e1-9e33-c80aa9429562:1-77", 1),
		"over the limit": s[:len(s)-1] + `,"x":"` + strings.Repeat("x", MaxResultBytes) + `"}`,
	} {
		if _, err := DecodeResult([]byte(bad)); !errors.Is(err, ErrResultInvalid) {
			t.Errorf("%s: DecodeResult = %v, want ErrResultInvalid", name, err)
		}
	}
}
