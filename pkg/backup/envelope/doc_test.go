package envelope

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// encryptionDoc is the page that describes the format; these tests keep it exact.
var encryptionDoc = filepath.Join("..", "..", "..", "docs", "backup-encryption.md")

// codeBlock returns the one fenced block of docs/backup-encryption.md whose
// info string is lang.
func codeBlock(t *testing.T, lang string) string {
	t.Helper()
	b, err := os.ReadFile(encryptionDoc)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	for _, l := range strings.SplitAfter(string(b), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(l) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(l)
		}
	}
	if len(blocks) != 1 {
		t.Fatalf("%s has %d ```%s blocks, want exactly one", encryptionDoc, len(blocks), lang)
	}
	return blocks[0]
}

// exampleValues reads the worked example's "name  value" lines: the block
// whose first line names the passphrase.
func exampleValues(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(encryptionDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "```text\npassphrase ")
	if !ok {
		t.Fatalf("%s has no worked example (a ```text block starting with the passphrase)", encryptionDoc)
	}
	block, _, _ := strings.Cut("passphrase "+after, "```")
	values := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		i := strings.Index(l, "  ")
		if i < 0 {
			t.Fatalf("worked example line %q is not \"name  value\"", l)
		}
		values[l[:i]] = strings.TrimSpace(l[i:])
	}
	return values
}

// The worked example is what the writer produces from its salt and prefix,
// and what the reader opens.
func TestDocWorkedExample(t *testing.T) {
	v := exampleValues(t)
	hexOf := func(name string) []byte {
		b, err := hex.DecodeString(v[name])
		if err != nil || len(b) == 0 {
			t.Fatalf("worked example: %s = %q is not hexadecimal", name, v[name])
		}
		return b
	}
	passFile := []byte(v["passphrase"] + "\n") // the page's passphrase file ends in a newline
	plain, salt, prefix := hexOf("plaintext"), hexOf("salt"), hexOf("nonce prefix")

	var out bytes.Buffer
	w, err := newWriter(&out, passFile, bytes.NewReader(append(bytes.Clone(salt), prefix...)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	file := out.Bytes()

	pass, err := Passphrase(passFile)
	if err != nil {
		t.Fatal(err)
	}
	key := func(info string) string {
		k, err := hkdf.Key(sha256.New, pass, salt, info, 32)
		if err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(k)
	}
	for _, c := range []struct{ name, got string }{
		{"check key", key("BRV1 header check key")},
		{"chunk key", key("BRV1 AES-256-GCM chunk key")},
		{"check", hex.EncodeToString(file[44:76])},
		{"nonce 0", hex.EncodeToString(append(bytes.Clone(prefix), 0, 0, 0, 0))},
		{"aad 0", "01"},
		{"chunk 0", hex.EncodeToString(file[76:])},
	} {
		if v[c.name] != c.got {
			t.Errorf("worked example: %s is %s on the page, %s by the code", c.name, v[c.name], c.got)
		}
	}
	if !bytes.Equal(file[:76], bytes.Join([][]byte{[]byte(Magic), salt, prefix, hexOf("check")}, nil)) {
		t.Errorf("worked example: the header is not magic | salt | nonce prefix | check")
	}
	dump := hex.Dump(file) + fmt.Sprintf("%08x\n", len(file)) // hexdump -C ends with the length
	if got := codeBlock(t, "console"); got != dump {
		t.Errorf("worked example: the page's hexdump\n%s\ndiffers from the file the code writes:\n%s", got, dump)
	}
	got, err := open(passFile, file)
	if err != nil || !bytes.Equal(got, plain) {
		t.Errorf("the worked example decrypts to %q, %v; want %q", got, err, plain)
	}
}

// python3 is Debian's, which sees the python3-cryptography package (a
// python3 earlier in PATH may not).
const python3 = "/usr/bin/python3"

// The page's script, run by Python's cryptography module (an implementation
// independent of Go's), decrypts what the Go writer wrote and refuses what
// the Go reader refuses.
func TestDocPythonScriptDecrypts(t *testing.T) {
	if _, err := os.Stat(python3); err != nil {
		t.Skipf("%s is missing, so the page's decryption script cannot be checked (install python3 and python3-cryptography: scripts/install-test-packages.sh)", python3)
	}
	if out, err := exec.Command(python3, "-c", "import cryptography").CombinedOutput(); err != nil {
		t.Skipf("%s has no cryptography module, so the page's decryption script cannot be checked (apt-get install python3-cryptography: scripts/install-test-packages.sh): %v %s", python3, err, out)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "brv1_decrypt.py")
	passFile := filepath.Join(dir, "passphrase")
	writeFile(t, script, []byte(codeBlock(t, "python")))
	writeFile(t, passFile, append([]byte("  "), append(bytes.Clone(testPass), "\r\n"...)...))

	// run decrypts envelope with the script; it returns the output file's
	// content (nil if the script left none) and the script's exit error.
	run := func(name string, envelope []byte, pass string) ([]byte, string, error) {
		in, out := filepath.Join(dir, name+".brv1"), filepath.Join(dir, name+".out")
		writeFile(t, in, envelope)
		msg, err := exec.Command(python3, script, pass, in, out).CombinedOutput()
		got, rerr := os.ReadFile(out)
		if rerr != nil {
			got = nil
		}
		if _, serr := os.Stat(out + ".part"); serr == nil {
			t.Errorf("%s: the script left %s.part behind", name, out)
		}
		return got, string(msg), err
	}

	for _, size := range []int{0, 1, ChunkSize - 1, ChunkSize, ChunkSize + 1, 3*ChunkSize + 777} {
		plain := payload(size, uint64(size)+100)
		got, msg, err := run(fmt.Sprintf("size-%d", size), seal(t, testPass, plain), passFile)
		if err != nil {
			t.Fatalf("%d bytes: the script failed: %v\n%s", size, err, msg)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("%d bytes: the script's output (%d bytes) differs from the plaintext", size, len(got))
		}
	}

	plain := payload(3*ChunkSize+10, 101)
	ct := seal(t, testPass, plain)
	swapped := bytes.Clone(ct)
	copy(swapped[chunkStart(0):], ct[chunkStart(1):chunkStart(2)])
	copy(swapped[chunkStart(1):], ct[chunkStart(0):chunkStart(1)])
	altered := bytes.Clone(ct)
	altered[chunkStart(1)+100] ^= 0x40
	wrongPass := filepath.Join(dir, "wrong")
	writeFile(t, wrongPass, []byte("not the passphrase\n"))
	for _, tc := range []struct {
		name, pass, says string
		envelope         []byte
	}{
		{"wrong passphrase", wrongPass, "wrong passphrase", ct},
		{"altered chunk", passFile, "chunk 1 does not authenticate", altered},
		{"reordered chunks", passFile, "chunk 0 does not authenticate", swapped},
		{"cut at a chunk boundary", passFile, "truncated after chunk 1", ct[:chunkStart(2)]},
		{"cut inside a chunk", passFile, "chunk 2 does not authenticate", ct[:chunkStart(2)+500]},
		{"cut inside the header", passFile, "truncated inside the header", ct[:40]},
		{"not an envelope", passFile, "not a BRV1 envelope", []byte(`{"dumper": "mysqlsh"}`)},
	} {
		got, msg, err := run(strings.ReplaceAll(tc.name, " ", "-"), tc.envelope, tc.pass)
		if err == nil {
			t.Errorf("%s: the script succeeded", tc.name)
		}
		if !strings.Contains(msg, tc.says) {
			t.Errorf("%s: the script said %q, want it to say %q", tc.name, msg, tc.says)
		}
		if got != nil {
			t.Errorf("%s: the script wrote %d bytes of output", tc.name, len(got))
		}
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
