package envelope

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// The benchmarks move 16 MiB as a store upload does: io.Copy from a reader
// (32 KiB reads, as from a file) into a writer that copies what it is given.
// BenchmarkCopy is that move without encryption, the baseline the other two
// are read against.
const benchSize = 16 << 20

// source hides bytes.Reader's WriteTo, so that io.Copy reads through its own
// buffer as it does from a file.
func source(b []byte) io.Reader { return struct{ io.Reader }{bytes.NewReader(b)} }

// sink copies every write into a scratch buffer, as a write into the page
// cache or a socket buffer does, instead of dropping it as io.Discard does.
type sink struct{ scratch []byte }

func (s *sink) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		rest = rest[copy(s.scratch, rest):]
	}
	return len(p), nil
}

func newSink() *sink { return &sink{scratch: make([]byte, 64<<10)} }

func BenchmarkCopy(b *testing.B) {
	plain, out := payload(benchSize, 1), newSink()
	b.SetBytes(benchSize)
	for b.Loop() {
		if _, err := io.Copy(out, source(plain)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncrypt(b *testing.B) {
	plain, out := payload(benchSize, 1), newSink()
	b.SetBytes(benchSize)
	for b.Loop() {
		w, err := NewWriter(out, testPass)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(w, source(plain)); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecrypt(b *testing.B) {
	ct, out := seal(b, testPass, payload(benchSize, 1)), newSink()
	b.SetBytes(benchSize)
	for b.Loop() {
		r, err := NewReader(source(ct), testPass)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(out, r); err != nil || n != benchSize {
			b.Fatalf("decrypted %d bytes: %v", n, err)
		}
	}
}

// BenchmarkPassphraseGuess is what one offline guess at a passphrase costs an
// attacker holding an envelope: the header check (HKDF, then HMAC), which
// docs/backup-encryption.md quotes to show why the passphrase must be random.
func BenchmarkPassphraseGuess(b *testing.B) {
	hdr := seal(b, testPass, nil)[:HeaderSize]
	guess := []byte("correct horse battery staple")
	for b.Loop() {
		if _, err := NewReader(bytes.NewReader(hdr), guess); !errors.Is(err, ErrWrongPassphrase) {
			b.Fatalf("a wrong guess gave %v", err)
		}
	}
}
