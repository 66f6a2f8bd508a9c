package envelope

import (
	"bytes"
	"crypto/sha256"
	"io"
	"runtime"
	"testing"
)

// zeroReader yields n zero bytes without holding them.
type zeroReader struct{ n int64 }

func (z *zeroReader) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n))
	clear(p[:k])
	z.n -= int64(k)
	return k, nil
}

// Encrypting and decrypting 64 MiB through a pipe allocates about two chunks,
// not anything that grows with the file.
func TestMemoryIsConstant(t *testing.T) {
	const size = 64 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	pr, pw := io.Pipe()
	go func() {
		w, err := NewWriter(pw, testPass)
		if err == nil {
			_, err = io.Copy(w, &zeroReader{n: size})
		}
		if err == nil {
			err = w.Close()
		}
		pw.CloseWithError(err)
	}()
	r, err := NewReader(pr, testPass)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.New()
	n, err := io.Copy(sum, r)
	if err != nil || n != size {
		t.Fatalf("decrypted %d bytes, error %v; want %d", n, err, size)
	}
	runtime.ReadMemStats(&after)
	if want := sha256.Sum256(make([]byte, size)); !bytes.Equal(sum.Sum(nil), want[:]) {
		t.Fatalf("the decrypted stream differs from the 64 MiB written")
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("encrypting and decrypting %d MiB allocated %d KiB", size>>20, allocated>>10)
	if allocated > 1<<20 {
		t.Errorf("encrypting and decrypting %d MiB allocated %d KiB; the writer and reader hold one chunk each (%d KiB)", size>>20, allocated>>10, ChunkSize>>10)
	}
}
