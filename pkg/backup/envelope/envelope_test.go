package envelope

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

var testPass = []byte("o0F8vQm4i2J6cXs9TzR1bW5hY3Vk3ZlLqP7eGtUaNhE=")

// payload is n seeded pseudo-random bytes (incompressible, no zero runs).
func payload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x42524631))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// seal encrypts plain in one Write.
func seal(t testing.TB, pass, plain []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := NewWriter(&out, pass)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// open decrypts ct and returns every byte Read released, and the error that
// ended it (nil for a clean io.EOF).
func open(pass, ct []byte) ([]byte, error) {
	r, err := NewReader(bytes.NewReader(ct), pass)
	if err != nil {
		return nil, err
	}
	var got bytes.Buffer
	_, err = io.Copy(&got, r)
	return got.Bytes(), err
}

// chunkStart is the offset of chunk i in an envelope.
func chunkStart(i int) int { return HeaderSize + i*(ChunkSize+tagSize) }

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		stored int // the envelope's size by the format: header, data, one tag per chunk
	}{
		{"empty", 0, 76 + 16},
		{"1 byte", 1, 76 + 1 + 16},
		{"chunk-1", ChunkSize - 1, 76 + 65535 + 16},
		{"chunk", ChunkSize, 76 + 65536 + 16},
		{"chunk+1", ChunkSize + 1, 76 + 65537 + 2*16},
		{"two chunks", 2 * ChunkSize, 76 + 131072 + 2*16},
		{"several MB", 5<<20 + 12345, 76 + 5<<20 + 12345 + 81*16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := payload(tc.size, uint64(tc.size))
			ct := seal(t, testPass, plain)
			if len(ct) != tc.stored {
				t.Fatalf("envelope of %d bytes is %d bytes, want %d", tc.size, len(ct), tc.stored)
			}
			if got := EncryptedSize(int64(tc.size)); got != int64(tc.stored) {
				t.Errorf("EncryptedSize(%d) = %d, want %d", tc.size, got, tc.stored)
			}
			if !IsEnvelope(ct) {
				t.Errorf("IsEnvelope is false on an envelope starting %q", ct[:8])
			}
			got, err := open(testPass, ct)
			if err != nil {
				t.Fatalf("decrypting: %v", err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("decrypted %d bytes differ from the %d written", len(got), len(plain))
			}
			if tc.size >= 16 && bytes.Contains(ct, plain[:16]) {
				t.Errorf("the envelope holds the plaintext's first 16 bytes in the clear")
			}
		})
	}
}

// Writes and reads of every size cut the stream anywhere; the result must not
// depend on where.
func TestRoundTripUnevenWritesAndReads(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, size := range []int{0, 1, 100, ChunkSize - 1, ChunkSize, ChunkSize + 1, 3*ChunkSize + 17} {
		plain := payload(size, uint64(size)+1)
		var out bytes.Buffer
		w, err := NewWriter(&out, testPass)
		if err != nil {
			t.Fatal(err)
		}
		for rest := plain; len(rest) > 0; {
			n := min(len(rest), r.IntN(2*ChunkSize+2))
			if k, err := w.Write(rest[:n]); err != nil || k != n {
				t.Fatalf("Write(%d bytes) = %d, %v", n, k, err)
			}
			rest = rest[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if want := EncryptedSize(int64(size)); int64(out.Len()) != want {
			t.Fatalf("size %d: written in pieces the envelope is %d bytes, in one Write %d", size, out.Len(), want)
		}
		for _, wrap := range []struct {
			name string
			f    func(io.Reader) io.Reader
		}{{"one byte reads", iotest.OneByteReader}, {"half reads", iotest.HalfReader}, {"data with EOF", iotest.DataErrReader}} {
			rd, err := NewReader(wrap.f(bytes.NewReader(out.Bytes())), testPass)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(iotest.HalfReader(rd))
			if err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("size %d, %s: read back %d bytes (equal: %v), error %v", size, wrap.name, len(got), bytes.Equal(got, plain), err)
			}
		}
	}
}

func TestEveryFileHasItsOwnSaltAndNonces(t *testing.T) {
	plain := payload(ChunkSize+5, 3)
	a, b := seal(t, testPass, plain), seal(t, testPass, plain)
	if bytes.Equal(a[4:4+saltSize], b[4:4+saltSize]) {
		t.Errorf("two files share the salt %x", a[4:4+saltSize])
	}
	if bytes.Equal(a[4+saltSize:4+saltSize+prefixSize], b[4+saltSize:4+saltSize+prefixSize]) {
		t.Errorf("two files share the nonce prefix")
	}
	if bytes.Equal(a[HeaderSize:], b[HeaderSize:]) {
		t.Errorf("the same plaintext under the same passphrase gave the same chunks")
	}
}

// tamperPositions is every byte of the header, of the first and last 512
// bytes of every chunk (its tag included) and every 97th byte between: each
// position costs a chunk's decryption, and GCM treats the bytes inside a
// chunk alike.
func tamperPositions(size int) []int {
	var at []int
	for i := range size {
		inChunk := (i - HeaderSize) % (ChunkSize + tagSize)
		if i < HeaderSize || inChunk < 512 || inChunk >= ChunkSize+tagSize-512 || i == size-1 || i%97 == 0 {
			at = append(at, i)
		}
	}
	return at
}

// Flipping a bit anywhere in an envelope is refused, and nothing of the
// altered chunk or after it is released.
func TestTamperAnyByte(t *testing.T) {
	plain := payload(2*ChunkSize+100, 11)
	ct := seal(t, testPass, plain)
	for _, i := range tamperPositions(len(ct)) {
		bad := bytes.Clone(ct)
		bad[i] ^= 1 << (i % 8)
		got, err := open(testPass, bad)
		var want error
		released := 0
		switch {
		case i < len(Magic):
			want = ErrNotEnvelope
		case i < HeaderSize:
			want = ErrWrongPassphrase
		default:
			want = ErrTampered
			released = (i - HeaderSize) / (ChunkSize + tagSize) * ChunkSize
		}
		if !errors.Is(err, want) {
			t.Fatalf("byte %d flipped: error %v, want %v", i, err, want)
		}
		if !bytes.Equal(got, plain[:released]) {
			t.Fatalf("byte %d flipped: released %d bytes, want the %d bytes of the chunks before it", i, len(got), released)
		}
	}
}

// Cutting the file anywhere is refused; at a chunk boundary it is reported
// as truncated, and the chunk before the cut is not released.
func TestTruncate(t *testing.T) {
	plain := payload(3*ChunkSize+10, 13) // chunks 0-2 full, chunk 3 holds 10 bytes
	ct := seal(t, testPass, plain)
	full := ChunkSize + tagSize
	type cut struct {
		at       int
		want     error
		released int
	}
	cuts := []cut{
		{0, ErrNotEnvelope, 0},
		{3, ErrNotEnvelope, 0},
		{4, ErrTruncated, 0},
		{HeaderSize - 1, ErrTruncated, 0},
		{HeaderSize, ErrTruncated, 0}, // no chunk at all
		// Chunk 3 is 26 bytes: 10 of data and the tag.
		{len(ct) - 1, ErrTampered, 3 * ChunkSize},
		{len(ct) - 10, ErrTampered, 3 * ChunkSize},
		{len(ct) - 11, ErrTruncated, 3 * ChunkSize},
	}
	for k := 1; k <= 3; k++ {
		b := chunkStart(k)
		// At the boundary after chunk k-1: chunk k-1 authenticates only as
		// "not last", so it is held back.
		cuts = append(cuts, cut{b, ErrTruncated, (k - 1) * ChunkSize})
		// Inside chunk k-1: it cannot authenticate.
		for _, d := range []int{1, tagSize, tagSize + 1, full / 2, full - 1} {
			cuts = append(cuts, cut{b - full + d, map[bool]error{true: ErrTruncated, false: ErrTampered}[d < tagSize], (k - 1) * ChunkSize})
		}
	}
	for _, c := range cuts {
		got, err := open(testPass, ct[:c.at])
		if !errors.Is(err, c.want) {
			t.Errorf("cut at byte %d of %d: error %v, want %v", c.at, len(ct), err, c.want)
		}
		if !bytes.Equal(got, plain[:c.released]) {
			t.Errorf("cut at byte %d: released %d bytes, want %d", c.at, len(got), c.released)
		}
	}
}

// Chunks moved, dropped, duplicated or taken from another file are refused.
func TestReorderAndSplice(t *testing.T) {
	plain := payload(4*ChunkSize, 17) // four full chunks, the last one full too
	ct := seal(t, testPass, plain)
	other := seal(t, testPass, payload(4*ChunkSize, 19))
	chunk := func(f []byte, i int) []byte { return f[chunkStart(i):chunkStart(i+1)] }
	build := func(hdr []byte, parts ...[]byte) []byte {
		return bytes.Join(append([][]byte{hdr}, parts...), nil)
	}
	h, oh := ct[:HeaderSize], other[:HeaderSize]
	c := func(i int) []byte { return chunk(ct, i) }
	for _, tc := range []struct {
		name     string
		data     []byte
		released int
	}{
		{"chunks 0 and 1 swapped", build(h, c(1), c(0), c(2), c(3)), 0},
		{"chunks 1 and 2 swapped", build(h, c(0), c(2), c(1), c(3)), ChunkSize},
		{"last chunk moved first", build(h, c(3), c(0), c(1), c(2)), 0},
		{"chunk 1 dropped", build(h, c(0), c(2), c(3)), ChunkSize},
		{"chunk 1 repeated", build(h, c(0), c(1), c(1), c(2), c(3)), 2 * ChunkSize},
		{"chunk appended after the last", build(h, c(0), c(1), c(2), c(3), c(3)), 3 * ChunkSize},
		{"chunk 2 from another file", build(h, c(0), c(1), chunk(other, 2), c(3)), 2 * ChunkSize},
		{"header from another file", build(oh, c(0), c(1), c(2), c(3)), 0},
		{"last chunk from another file", build(h, c(0), c(1), c(2), chunk(other, 3)), 3 * ChunkSize},
	} {
		got, err := open(testPass, tc.data)
		if !errors.Is(err, ErrTampered) {
			t.Errorf("%s: error %v, want %v", tc.name, err, ErrTampered)
		}
		if !bytes.Equal(got, plain[:tc.released]) {
			t.Errorf("%s: released %d bytes, want %d", tc.name, len(got), tc.released)
		}
	}
}

func TestWrongPassphrase(t *testing.T) {
	ct := seal(t, testPass, payload(1000, 23))
	for _, p := range [][]byte{
		[]byte("another passphrase entirely"),
		append(bytes.Clone(testPass), 'x'),
		testPass[:len(testPass)-1],
		append([]byte{testPass[0] ^ 0x20}, testPass[1:]...),
	} {
		_, err := NewReader(bytes.NewReader(ct), p)
		if !errors.Is(err, ErrWrongPassphrase) {
			t.Errorf("passphrase %q: error %v, want %v", p, err, ErrWrongPassphrase)
		}
	}
}

func TestPassphraseWhitespace(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		empty     bool
	}{
		{raw: "secret", want: "secret"},
		{raw: "secret\n", want: "secret"},
		{raw: " \t\r\n\v\fsecret\r\n", want: "secret"},
		{raw: "two words\n", want: "two words"},
		{raw: "\u00a0secret", want: "\u00a0secret"}, // a UTF-8 no-break space is not ASCII whitespace
		{raw: "", empty: true},
		{raw: " \n\t\r", empty: true},
	} {
		got, err := Passphrase([]byte(tc.raw))
		if tc.empty {
			if err == nil {
				t.Errorf("Passphrase(%q) = %q, want an error", tc.raw, got)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("Passphrase(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		}
	}
	// Writer and reader strip the same way: a Secret file's trailing
	// newline does not change the key.
	plain := []byte("dump bytes")
	ct := seal(t, []byte("secret\n"), plain)
	if got, err := open([]byte("  secret"), ct); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("written with \"secret\\n\", read with \"  secret\": %q, %v", got, err)
	}
	if _, err := open([]byte("\u00a0secret"), ct); !errors.Is(err, ErrWrongPassphrase) {
		t.Errorf("read with a no-break space before the passphrase: %v, want %v", err, ErrWrongPassphrase)
	}
	if _, err := NewWriter(io.Discard, []byte(" \n")); err == nil {
		t.Errorf("NewWriter took a passphrase of whitespace only")
	}
	if _, err := NewReader(bytes.NewReader(ct), nil); err == nil || errors.Is(err, ErrWrongPassphrase) {
		t.Errorf("NewReader with no passphrase: %v, want the empty-passphrase error", err)
	}
}

func TestNotAnEnvelope(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty file", nil},
		{"three bytes", []byte("BRV")},
		{"JSON", []byte(`{"dumper": "mysqlsh Ver 9.7.0", "version": "2.0.1"}`)},
		{"zstd frame", append([]byte{0x28, 0xb5, 0x2f, 0xfd}, payload(200, 29)...)},
		{"another version", append([]byte("BRV2"), payload(200, 31)...)},
		{"lower case", append([]byte("brv1"), payload(200, 37)...)},
	} {
		if IsEnvelope(tc.data) {
			t.Errorf("%s: IsEnvelope is true", tc.name)
		}
		_, err := NewReader(bytes.NewReader(tc.data), testPass)
		if !errors.Is(err, ErrNotEnvelope) {
			t.Errorf("%s: NewReader error %v, want %v", tc.name, err, ErrNotEnvelope)
		}
	}
	if !IsEnvelope([]byte("BRV1")) || IsEnvelope([]byte("BRV")) {
		t.Errorf("IsEnvelope does not judge by the four magic bytes")
	}
}

func TestWriterLifecycle(t *testing.T) {
	var out bytes.Buffer
	w, err := NewWriter(&out, testPass)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	n := out.Len()
	if err := w.Close(); err != nil || out.Len() != n {
		t.Errorf("second Close: %v, wrote %d more bytes", err, out.Len()-n)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Errorf("Write after Close succeeded")
	}

	// A failing destination fails the Write that flushes, and every call after.
	fail := &failAfter{n: HeaderSize + 10}
	w, err = NewWriter(fail, testPass)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(payload(ChunkSize, 41)); err != nil {
		t.Fatalf("a Write that fills one chunk wrote it already: %v", err)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatalf("the Write that flushes chunk 0 to a failing destination succeeded")
	}
	if err := w.Close(); err == nil {
		t.Errorf("Close after a failed write succeeded")
	}
	if _, err := NewWriter(&failAfter{n: 3}, testPass); err == nil {
		t.Errorf("NewWriter succeeded though the header could not be written")
	}
}

type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

func TestEncryptedSize(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 43))
	for range 40 {
		n := r.IntN(6 * ChunkSize)
		counted := &countingWriter{}
		w, err := NewWriter(counted, testPass)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if EncryptedSize(int64(n)) != counted.n {
			t.Fatalf("EncryptedSize(%d) = %d, the writer wrote %d", n, EncryptedSize(int64(n)), counted.n)
		}
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
