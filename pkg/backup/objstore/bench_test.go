package objstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/testbed/s3server"
)

// BenchmarkS3Create measures the store's write throughput to versitygw on loopback (MB/s), for a
// stream (size unknown, 16 MiB parts) and a single-part file; the server's own disk writes are
// part of the figure.
func BenchmarkS3Create(b *testing.B) {
	srv := s3server.StartT(b)
	if err := srv.Bucket("bench"); err != nil {
		b.Fatal(err)
	}
	st, err := objstore.NewS3(srv.Config("bench", "b"))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		size int
	}{{"stream-64MiB", 64 << 20}, {"single-8MiB", 8 << 20}} {
		data := randomBytes(42, c.size)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(c.size))
			for i := 0; b.Loop(); i++ {
				key := fmt.Sprintf("%s/%d", c.name, i)
				if _, err := st.Create(context.Background(), key, onlyReader{bytes.NewReader(data)}, -1); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				_ = st.Delete(context.Background(), key)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkS3CreateEncryptedStream is BenchmarkS3Create's stream produced by the BRV1 envelope
// as the backup step produces it (a CPU-bound source): MB/s of plaintext.
func BenchmarkS3CreateEncryptedStream(b *testing.B) {
	srv := s3server.StartT(b)
	if err := srv.Bucket("bench"); err != nil {
		b.Fatal(err)
	}
	st, err := objstore.NewS3(srv.Config("bench", "b"))
	if err != nil {
		b.Fatal(err)
	}
	data := randomBytes(42, 64<<20)
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		pr, pw := io.Pipe()
		go func() {
			w, err := envelope.NewWriter(pw, []byte("0123456789abcdef0123456789abcdef"))
			if err == nil {
				_, err = io.Copy(w, bytes.NewReader(data))
			}
			if err == nil {
				err = w.Close()
			}
			pw.CloseWithError(err)
		}()
		key := fmt.Sprintf("enc/%d", i)
		if _, err := st.Create(context.Background(), key, pr, -1); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = st.Delete(context.Background(), key)
		b.StartTimer()
	}
}

// BenchmarkDirCreate is the same for the PVC store on the test's temporary directory.
func BenchmarkDirCreate(b *testing.B) {
	st, err := objstore.NewDir("bench", b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	data := randomBytes(42, 64<<20)
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("f%d", i)
		if _, err := st.Create(context.Background(), key, io.Reader(onlyReader{bytes.NewReader(data)}), -1); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = st.Delete(context.Background(), key)
		b.StartTimer()
	}
}
