package stamp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
)

const (
	uuidA = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	uuidB = "8a94f357-aab4-11df-86ab-c80aa9429562"
)

// store is a map of stored bytes that Verify reads through open.
type store map[string][]byte

func (s store) open(key string) (io.ReadCloser, error) {
	b, ok := s[key]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// example returns a store of three files and the stamp of them.
func example(t *testing.T) (Stamp, store) {
	t.Helper()
	st := store{
		"@.json":                 []byte(`{"dumper":"mysqlsh"}`),
		"shop@orders@@0.tsv.zst": bytes.Repeat([]byte{0x28, 0xb5, 0x2f, 0xfd}, 1000),
		"@.done.json":            {},
	}
	s := Stamp{
		Backup:         Object{Name: "nightly-1", UID: "0b6c1e58-0d8e-4a55-9d53-6a7f8f0e2c11"},
		Group:          Object{Name: "orders", UID: "5d1f0c1e-33a1-4bde-8f0e-1f2a3b4c5d6e"},
		Attempt:        2,
		GTIDExecuted:   uuidB + ":1-7,\n" + uuidA + ":1-20",
		BinlogPosition: BinlogPosition{File: "binlog.000003", Position: 1234},
		Encryption:     EncryptionNone,
	}
	for _, k := range []string{"shop@orders@@0.tsv.zst", "@.json", "@.done.json"} {
		f, err := Sum(k, bytes.NewReader(st[k]))
		if err != nil {
			t.Fatal(err)
		}
		s.Files = append(s.Files, f)
	}
	return s, st
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	s, st := example(t)
	data, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode(Encode(s)): %v\n%s", err, data)
	}
	if want := uuidA + ":1-20," + uuidB + ":1-7"; got.GTIDExecuted != want {
		t.Errorf("GTIDExecuted = %q, want canonical %q", got.GTIDExecuted, want)
	}
	var keys []string
	for _, f := range got.Files {
		keys = append(keys, f.Key)
	}
	if strings.Join(keys, " ") != "@.done.json @.json shop@orders@@0.tsv.zst" {
		t.Errorf("files not in key order: %v", keys)
	}
	if got.Backup != s.Backup || got.Group != s.Group || got.Attempt != 2 ||
		got.BinlogPosition != s.BinlogPosition || got.Encryption != EncryptionNone {
		t.Errorf("decoded %+v, want the fields of %+v", got, s)
	}
	if err := Verify(got, st.open); err != nil {
		t.Errorf("Verify of untouched files: %v", err)
	}
	// The SHA-256 of an empty file is the well-known constant: the hash is
	// of the bytes, not of something else.
	if got.Files[0].SHA256 != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" || got.Files[0].Size != 0 {
		t.Errorf("empty file entry = %+v", got.Files[0])
	}
	if !bytes.HasPrefix(data, []byte("{\n  \"version\": 1,")) {
		t.Errorf("the version is not the first field:\n%s", data)
	}
}

func TestDecodeRefuses(t *testing.T) {
	s, _ := example(t)
	good, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	text := string(good)
	cases := []struct {
		name string
		data string
		want error
	}{
		{"newer version", strings.Replace(text, `"version": 1`, `"version": 2`, 1), ErrUnknownVersion},
		{"version zero", strings.Replace(text, `"version": 1`, `"version": 0`, 1), ErrUnknownVersion},
		{"no version", strings.Replace(text, `"version": 1,`, ``, 1), ErrInvalid},
		{"unknown field", strings.Replace(text, `"attempt": 2`, `"attempt": 2, "extra": true`, 1), ErrInvalid},
		{"trailing data", text + "{}", ErrInvalid},
		{"not JSON", "BRV1....", ErrInvalid},
		{"no backup UID", strings.Replace(text, s.Backup.UID, "", 1), ErrInvalid},
		{"no group name", strings.Replace(text, `"name": "orders"`, `"name": ""`, 1), ErrInvalid},
		{"bad GTID set", strings.Replace(text, uuidA+":1-20", uuidA+":20-1", 1), ErrInvalid},
		{"non-canonical GTID set", strings.Replace(text, uuidA+":1-20", uuidA+":1-19:20", 1), ErrInvalid},
		{"short sha256", strings.Replace(text, `"sha256": "e3b0`, `"sha256": "`, 1), ErrInvalid},
		{"upper-case sha256", strings.Replace(text, `"sha256": "e3b0`, `"sha256": "E3B0`, 1), ErrInvalid},
		{"negative size", strings.Replace(text, `"size": 0`, `"size": -1`, 1), ErrInvalid},
		{"duplicate key", strings.Replace(text, `"key": "@.json"`, `"key": "@.done.json"`, 1), ErrInvalid},
		{"out of order", strings.Replace(text, `"key": "@.done.json"`, `"key": "z"`, 1), ErrInvalid},
		{"no files", strings.Split(text, `"files"`)[0] + `"files": []}`, ErrInvalid},
		{"no encryption", strings.Replace(text, `"encryption": "none"`, `"encryption": ""`, 1), ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.data == text {
				t.Fatal("the case did not change the stamp")
			}
			_, err := Decode([]byte(c.data))
			if !errors.Is(err, c.want) {
				t.Errorf("Decode = %v, want %v", err, c.want)
			}
		})
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	s, _ := example(t)
	for name, mutate := range map[string]func(*Stamp){
		"negative attempt": func(s *Stamp) { s.Attempt = -1 },
		"no backup name":   func(s *Stamp) { s.Backup.Name = "" },
		"no group UID":     func(s *Stamp) { s.Group.UID = "" },
		"bad GTID":         func(s *Stamp) { s.GTIDExecuted = "not-a-uuid:1" },
		"empty key":        func(s *Stamp) { s.Files = append(s.Files, File{SHA256: s.Files[0].SHA256}) },
		"duplicate key":    func(s *Stamp) { s.Files = append(s.Files, s.Files[0]) },
	} {
		c := s
		c.Files = append([]File(nil), s.Files...)
		mutate(&c)
		if _, err := Encode(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Encode = %v, want ErrInvalid", name, err)
		}
	}
}

func TestVerifyNamesTheFirstFileThatDiffers(t *testing.T) {
	const chunk = "shop@orders@@0.tsv.zst"
	cases := []struct {
		name    string
		change  func(store)
		wantErr error
		wantIn  string
	}{
		{"one byte flipped", func(st store) { st[chunk][1234] ^= 0x01 }, ErrMismatch, `"` + chunk + `" has SHA-256`},
		{"truncated", func(st store) { st[chunk] = st[chunk][:len(st[chunk])-1] }, ErrMismatch, `"` + chunk + `" is 3999 bytes, the stamp says 4000`},
		{"appended", func(st store) { st["@.done.json"] = []byte("x") }, ErrMismatch, `"@.done.json" is 1 bytes`},
		{"missing", func(st store) { delete(st, "@.json") }, fs.ErrNotExist, `file "@.json": open`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, st := example(t)
			st[chunk] = append([]byte(nil), st[chunk]...)
			c.change(st)
			err := Verify(s, st.open)
			if !errors.Is(err, c.wantErr) || !strings.Contains(fmt.Sprint(err), c.wantIn) {
				t.Errorf("Verify = %v, want %v containing %q", err, c.wantErr, c.wantIn)
			}
		})
	}
	// Two files differ: the first in key order is named.
	s, st := example(t)
	d, _ := Encode(s)
	s, _ = Decode(d)
	st["@.json"] = []byte("changed")
	st[chunk] = []byte("changed")
	if err := Verify(s, st.open); !strings.Contains(fmt.Sprint(err), `"@.json"`) {
		t.Errorf("Verify with two changed files = %v, want @.json named", err)
	}
}

// A read error part-way (a store connection reset) is reported as such, not
// as a mismatch and not as success.
func TestVerifyReportsReadErrors(t *testing.T) {
	s, st := example(t)
	boom := errors.New("connection reset")
	open := func(key string) (io.ReadCloser, error) {
		rc, err := st.open(key)
		if err != nil || key != "shop@orders@@0.tsv.zst" {
			return rc, err
		}
		return io.NopCloser(io.MultiReader(io.LimitReader(rc, 10), iotestErr{boom})), nil
	}
	err := Verify(s, open)
	if !errors.Is(err, boom) || errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "shop@orders@@0.tsv.zst") {
		t.Errorf("Verify = %v, want the read error naming the file", err)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }
