package playground

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProjectAtomicallyIsTheKubeletsLayout: keys are links through ..data
// to a timestamped directory; an update swaps ..data to a new directory,
// removes the old one and the links of keys that are gone.
func TestProjectAtomicallyIsTheKubeletsLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := projectAtomically(dir, map[string][]byte{"tls.crt": []byte("one"), "old.key": []byte("x")}); err != nil {
		t.Fatal(err)
	}
	first, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	if link, _ := os.Readlink(filepath.Join(dir, "tls.crt")); link != filepath.Join("..data", "tls.crt") {
		t.Errorf("tls.crt links to %q, want ..data/tls.crt", link)
	}
	if err := projectAtomically(dir, map[string][]byte{"tls.crt": []byte("two")}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tls.crt")); err != nil || string(b) != "two" {
		t.Errorf("tls.crt after the update = %q, %v; want two", b, err)
	}
	if second, _ := os.Readlink(filepath.Join(dir, "..data")); second == first {
		t.Error("..data was not swapped to a new directory")
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("the old %s is still there: %v", first, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "old.key")); !os.IsNotExist(err) {
		t.Errorf("old.key, gone from the Secret, still linked: %v", err)
	}
}
