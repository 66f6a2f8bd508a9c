package objstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/testbed/s3server"
)

const mib = 1 << 20

// world is one versitygw with one bucket; its checks read what the server holds through the
// server's own root client, never through the store under test.
type world struct {
	t      *testing.T
	srv    *s3server.Server
	bucket string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	srv := s3server.StartT(t)
	if err := srv.Bucket("backups"); err != nil {
		t.Fatal(err)
	}
	return &world{t: t, srv: srv, bucket: "backups"}
}

func (w *world) store(prefix string, edit func(*objstore.S3Config)) objstore.Store {
	w.t.Helper()
	cfg := w.srv.Config(w.bucket, prefix)
	cfg.PartSize = 5 * mib
	if edit != nil {
		edit(&cfg)
	}
	st, err := objstore.NewS3(cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// held returns the bytes the server holds under the bucket key, and whether it holds any.
func (w *world) held(key string) ([]byte, bool) {
	w.t.Helper()
	ctx := context.Background()
	obj, err := w.srv.Client().GetObject(ctx, w.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return nil, false
	}
	if err != nil {
		w.t.Fatalf("reading %s from the server: %v", key, err)
	}
	return data, true
}

// keys lists every object the bucket holds.
func (w *world) keys() []string {
	w.t.Helper()
	var out []string
	for o := range w.srv.Client().ListObjects(context.Background(), w.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			w.t.Fatal(o.Err)
		}
		out = append(out, o.Key)
	}
	return out
}

// pendingUploads counts multipart uploads begun and neither completed nor aborted.
func (w *world) pendingUploads() int {
	w.t.Helper()
	core := minio.Core{Client: w.srv.Client()}
	res, err := core.ListMultipartUploads(context.Background(), w.bucket, "", "", "", "", 1000)
	if err != nil {
		w.t.Fatal(err)
	}
	return len(res.Uploads)
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// onlyReader hides bytes.Reader's other methods so the store sees a plain stream.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestS3CreateOpenListDelete(t *testing.T) {
	w := newWorld(t)
	st := w.store("/team/prod", nil)
	ctx := context.Background()
	cases := []struct {
		key   string
		data  []byte
		known bool
	}{
		{"b1/1/empty", nil, true},
		{"b1/1/@.json", []byte(`{"gtidExecuted":""}`), true},
		{"b1/1/one-part-stream", randomBytes(1, 5*mib), false},
		{"b1/1/multipart-known", randomBytes(2, 12*mib+7), true},
		{"b1/1/multipart-stream", randomBytes(3, 11*mib), false},
		{"b1/2/other-attempt", []byte("x"), true},
	}
	for _, c := range cases {
		size := int64(-1)
		if c.known {
			size = int64(len(c.data))
		}
		info, err := st.Create(ctx, c.key, onlyReader{bytes.NewReader(c.data)}, size)
		if err != nil {
			t.Fatalf("create %s: %v", c.key, err)
		}
		if info.Key != c.key || info.Size != int64(len(c.data)) || info.ETag == "" {
			t.Errorf("create %s returned %+v", c.key, info)
		}
		held, ok := w.held("team/prod/" + c.key)
		if !ok || !bytes.Equal(held, c.data) {
			t.Fatalf("server holds %d bytes (present %v) under team/prod/%s, want %d", len(held), ok, c.key, len(c.data))
		}
		r, err := st.Open(ctx, c.key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil || !bytes.Equal(got, c.data) {
			t.Fatalf("open %s: %d bytes, %v", c.key, len(got), err)
		}
	}
	if loc := st.Location("b1/1/@.json"); loc != "s3://backups/team/prod/b1/1/@.json" {
		t.Errorf("location %q", loc)
	}

	list, err := st.List(ctx, "b1/1/")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, o := range list {
		listed = append(listed, fmt.Sprintf("%s=%d", o.Key, o.Size))
	}
	want := "b1/1/@.json=19 b1/1/empty=0 b1/1/multipart-known=12582919 b1/1/multipart-stream=11534336 b1/1/one-part-stream=5242880"
	if strings.Join(listed, " ") != want {
		t.Errorf("list b1/1/:\n got %s\nwant %s", strings.Join(listed, " "), want)
	}

	if err := st.Delete(ctx, "b1/1/@.json"); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.held("team/prod/b1/1/@.json"); ok {
		t.Fatal("deleted object still on the server")
	}
	if err := st.Delete(ctx, "b1/1/@.json"); err != nil {
		t.Errorf("deleting a missing key: %v", err)
	}
	if _, err := st.Open(ctx, "b1/1/@.json"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("open of a deleted key: %v, want ErrNotFound", err)
	}
	if w.pendingUploads() != 0 {
		t.Errorf("%d multipart uploads left open", w.pendingUploads())
	}
	for _, bad := range []string{"", "/abs", "a//b", "a/../b", "a/./b", "a/"} {
		if _, err := st.Create(ctx, bad, strings.NewReader("x"), 1); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
}

func TestS3CreateNeverOverwrites(t *testing.T) {
	w := newWorld(t)
	st := w.store("p", nil)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		size int
	}{{"single", 1000}, {"multipart", 11 * mib}} {
		first, second := randomBytes(10, c.size), randomBytes(11, c.size)
		key := "k/" + c.name
		if _, err := st.Create(ctx, key, bytes.NewReader(first), -1); err != nil {
			t.Fatal(err)
		}
		_, err := st.Create(ctx, key, bytes.NewReader(second), -1)
		if !errors.Is(err, objstore.ErrExists) {
			t.Fatalf("%s: second create: %v, want ErrExists", c.name, err)
		}
		if !strings.Contains(err.Error(), "s3://backups/p/"+key) {
			t.Errorf("error does not name the location: %v", err)
		}
		if held, _ := w.held("p/" + key); !bytes.Equal(held, first) {
			t.Fatalf("%s: the server's object changed after a refused create", c.name)
		}
	}
	if n := w.pendingUploads(); n != 0 {
		t.Errorf("%d multipart uploads left open by the refused create", n)
	}
}

// barrierReader yields data and, before its end, waits until every other writer's reader got
// there too: each writer has then uploaded all its parts but the last, so the completions race.
type barrierReader struct {
	data    []byte
	off     int
	arrived *sync.WaitGroup
	waited  bool
}

func (b *barrierReader) Read(p []byte) (int, error) {
	if b.off+len(p) >= len(b.data) && !b.waited {
		b.waited = true
		b.arrived.Done()
		b.arrived.Wait()
	}
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

// TestS3RacingMultipartWritersOneWins: two writers of one key, both above the multipart
// threshold and both with every part uploaded before either completes. Exactly one may win; the
// other must get ErrExists, and the server must hold the winner's bytes.
func TestS3RacingMultipartWritersOneWins(t *testing.T) {
	w := newWorld(t)
	st := w.store("race", nil)
	for round := 0; round < 3; round++ {
		key := fmt.Sprintf("attempt/%d/data.tsv", round)
		payloads := [][]byte{randomBytes(uint64(100+2*round), 11*mib), randomBytes(uint64(101+2*round), 11*mib)}
		var arrived sync.WaitGroup
		arrived.Add(2)
		errs := make([]error, 2)
		var done sync.WaitGroup
		for i := range payloads {
			done.Add(1)
			go func() {
				defer done.Done()
				_, errs[i] = st.Create(context.Background(), key, &barrierReader{data: payloads[i], arrived: &arrived}, -1)
			}()
		}
		done.Wait()
		winners := 0
		var winner []byte
		for i, err := range errs {
			switch {
			case err == nil:
				winners++
				winner = payloads[i]
			case !errors.Is(err, objstore.ErrExists):
				t.Fatalf("round %d writer %d: %v", round, i, err)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d writers succeeded (errors %v), want exactly one", round, winners, errs)
		}
		held, _ := w.held("race/" + key)
		if sha256.Sum256(held) != sha256.Sum256(winner) {
			t.Fatalf("round %d: the server holds %d bytes that are not the winner's", round, len(held))
		}
	}
	if n := w.pendingUploads(); n != 0 {
		t.Errorf("%d multipart uploads left open by the losers", n)
	}
}

func TestS3ProbePassesOnVersitygwAndCleansUp(t *testing.T) {
	w := newWorld(t)
	st := w.store("probe", nil)
	if err := st.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if keys := w.keys(); len(keys) != 0 {
		t.Errorf("probe left objects: %v", keys)
	}
	if n := w.pendingUploads(); n != 0 {
		t.Errorf("probe left %d multipart uploads", n)
	}
}

// TestS3ProbeRefusesStoreThatIgnoresConditions: behind a proxy that drops If-None-Match, the
// probe must refuse the store, for single PUTs and for multipart completion each alone.
func TestS3ProbeRefusesStoreThatIgnoresConditions(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct {
		name                    string
		stripSingle, stripMulti bool
		want                    string
	}{
		{"single PUT", true, false, "a PUT with If-None-Match: * replaced an existing object"},
		{"multipart completion", false, true, "a CompleteMultipartUpload with If-None-Match: * replaced an existing object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxy := startConditionProxy(t, w.srv, c.stripSingle, c.stripMulti)
			st := w.store("probe-"+strings.ReplaceAll(c.name, " ", "-"), func(cfg *objstore.S3Config) { cfg.Endpoint = proxy.srv.URL })
			err := st.Probe(context.Background())
			if !errors.Is(err, objstore.ErrConditionalWritesNotEnforced) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("probe: %v, want ErrConditionalWritesNotEnforced saying %q", err, c.want)
			}
			if stripped, _, _ := proxy.counts(); stripped == 0 {
				t.Fatal("the proxy stripped nothing: the test did not test")
			}
			if keys := w.keys(); len(keys) != 0 {
				t.Errorf("probe left objects: %v", keys)
			}
		})
	}
}

func TestS3StreamOverPartLimitIsRefused(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	t.Run("1000 parts", func(t *testing.T) {
		proxy := startConditionProxy(t, w.srv, false, false)
		cfg := w.srv.Config(w.bucket, "limit")
		cfg.Endpoint, cfg.MaxParts, cfg.PartSize = proxy.srv.URL, 1000, 64<<10
		st, err := objstore.NewS3WithMinPartSize(cfg, 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		limit := int64(1000 * 64 << 10)
		src := &countingReader{r: io.LimitReader(zeroes{}, limit+1)}
		_, err = st.Create(ctx, "big", src, -1)
		if !errors.Is(err, objstore.ErrTooLarge) {
			t.Fatalf("create of %d bytes with 1000 parts of 64 KiB: %v, want ErrTooLarge", limit+1, err)
		}
		if _, ok := w.held("limit/big"); ok {
			t.Fatal("the server holds an object under the refused key")
		}
		if n := w.pendingUploads(); n != 0 {
			t.Errorf("%d multipart uploads left open", n)
		}
		if _, parts, maxPart := proxy.counts(); parts != 999 || maxPart != 999 {
			t.Errorf("uploaded %d parts up to part %d before refusing; want 999 (the 1000th part is where the stream overflows)", parts, maxPart)
		}
		if src.n > limit+1 {
			t.Errorf("read %d bytes of the stream, more than the limit + 1", src.n)
		}
	})
	t.Run("exactly at the limit", func(t *testing.T) {
		st := w.store("exact", func(cfg *objstore.S3Config) { cfg.MaxParts = 2 })
		data := randomBytes(7, 10*mib)
		info, err := st.Create(ctx, "fits", onlyReader{bytes.NewReader(data)}, -1)
		if err != nil {
			t.Fatalf("a stream of exactly MaxParts × PartSize: %v", err)
		}
		if held, _ := w.held("exact/fits"); !bytes.Equal(held, data) || !strings.HasSuffix(info.ETag, "-2") {
			t.Fatalf("server holds %d bytes, etag %q (want two parts)", len(held), info.ETag)
		}
		_, err = st.Create(ctx, "one-more", onlyReader{bytes.NewReader(append(data, 0))}, -1)
		if !errors.Is(err, objstore.ErrTooLarge) {
			t.Fatalf("one byte over: %v, want ErrTooLarge", err)
		}
		if _, ok := w.held("exact/one-more"); ok {
			t.Fatal("a refused stream left an object")
		}
	})
	t.Run("known size grows the parts", func(t *testing.T) {
		st := w.store("known", func(cfg *objstore.S3Config) { cfg.MaxParts = 2 })
		data := randomBytes(8, 11*mib)
		info, err := st.Create(ctx, "grown", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if held, _ := w.held("known/grown"); !bytes.Equal(held, data) || !strings.HasSuffix(info.ETag, "-2") {
			t.Fatalf("server holds %d bytes, etag %q (want two parts of 6 MiB)", len(held), info.ETag)
		}
	})
	if n := w.pendingUploads(); n != 0 {
		t.Errorf("%d multipart uploads left open", n)
	}
}

func TestS3SizeMismatchStoresNothing(t *testing.T) {
	w := newWorld(t)
	st := w.store("size", nil)
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		have, said int
	}{{"short single", 99, 100}, {"long single", 101, 100}, {"short multipart", 11 * mib, 11*mib + 1}, {"long multipart", 11*mib + 1, 11 * mib}} {
		key := strings.ReplaceAll(c.name, " ", "-")
		if _, err := st.Create(ctx, key, bytes.NewReader(randomBytes(1, c.have)), int64(c.said)); err == nil {
			t.Errorf("%s: %d bytes stored as %d", c.name, c.have, c.said)
		}
		if _, ok := w.held("size/" + key); ok {
			t.Errorf("%s: the server holds an object", c.name)
		}
	}
	if n := w.pendingUploads(); n != 0 {
		t.Errorf("%d multipart uploads left open", n)
	}
}

func TestS3ErrorsNameTheCause(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	missing := w.store("p", func(cfg *objstore.S3Config) { cfg.Bucket = "no-such-bucket" })
	if err := missing.Probe(ctx); !errors.Is(err, objstore.ErrNoSuchBucket) {
		t.Errorf("probe of a missing bucket: %v, want ErrNoSuchBucket", err)
	}
	wrong := w.store("p", func(cfg *objstore.S3Config) { cfg.SecretKey = "not-the-secret" })
	err := wrong.Probe(ctx)
	if !errors.Is(err, objstore.ErrAccessDenied) {
		t.Errorf("probe with a wrong secret: %v, want ErrAccessDenied", err)
	}
	if err != nil && strings.Contains(err.Error(), "not-the-secret") {
		t.Errorf("the error shows the secret: %v", err)
	}
}

type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestS3OverTLSTrustsOnlyTheGivenCA: against a server whose certificate a private CA issued, the
// store works with that CA and refuses the server without it.
func TestS3OverTLSTrustsOnlyTheGivenCA(t *testing.T) {
	srv := s3server.StartTLST(t)
	if err := srv.Bucket("tls"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := srv.Config("tls", "p")
	if !strings.HasPrefix(cfg.Endpoint, "https://127.0.0.1:") || len(cfg.CA) == 0 {
		t.Fatalf("config %s with %d bytes of CA", cfg.Endpoint, len(cfg.CA))
	}
	st, err := objstore.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	data := randomBytes(9, 6*mib)
	if _, err := st.Create(ctx, "f", bytes.NewReader(data), -1); err != nil {
		t.Fatal(err)
	}
	r, err := st.Open(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	_ = r.Close()
	if !bytes.Equal(got, data) {
		t.Fatal("read back other bytes over TLS")
	}
	cfg.CA = nil
	untrusting, err := objstore.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := untrusting.Probe(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v, want a certificate error", err)
	}
}

// cancellingReader cancels its context once it has yielded after bytes.
type cancellingReader struct {
	r      io.Reader
	after  int
	n      int
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	if c.n >= c.after {
		c.cancel()
	}
	return n, err
}

// TestS3CancelledUploadLeavesNothing: a context cancelled in the middle of a multipart upload
// fails the write, and the upload is aborted all the same (nothing stored, no parts left).
func TestS3CancelledUploadLeavesNothing(t *testing.T) {
	w := newWorld(t)
	st := w.store("cancel", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &cancellingReader{r: bytes.NewReader(randomBytes(3, 16*mib)), after: 11 * mib, cancel: cancel}
	if _, err := st.Create(ctx, "f", src, -1); !errors.Is(err, context.Canceled) {
		t.Fatalf("create with a cancelled context: %v, want context.Canceled", err)
	}
	if _, ok := w.held("cancel/f"); ok {
		t.Fatal("the server holds the cancelled object")
	}
	if n := w.pendingUploads(); n != 0 {
		t.Errorf("%d multipart uploads left open after the cancel", n)
	}
}

// TestS3CorruptedBodyIsRefused: the payload's SHA-256 is signed into every PUT, so a body changed
// on the way is refused by the server, for a single PUT and for a part.
func TestS3CorruptedBodyIsRefused(t *testing.T) {
	w := newWorld(t)
	proxy := startConditionProxy(t, w.srv, false, false)
	proxy.mu.Lock()
	proxy.corrupt = true
	proxy.mu.Unlock()
	st := w.store("corrupt", func(cfg *objstore.S3Config) { cfg.Endpoint = proxy.srv.URL })
	for _, size := range []int{1000, 11 * mib} {
		key := fmt.Sprintf("f%d", size)
		if _, err := st.Create(context.Background(), key, bytes.NewReader(randomBytes(4, size)), -1); err == nil {
			t.Errorf("%d bytes corrupted on the way were stored", size)
		}
		if _, ok := w.held("corrupt/" + key); ok {
			t.Errorf("the server holds the corrupted %d-byte object", size)
		}
	}
	if n := w.pendingUploads(); n != 0 {
		t.Errorf("%d multipart uploads left open", n)
	}
}

// TestS3RetryAfterALostSuccessIsNotExists: when the answer to a successful conditional write is
// lost and minio-go retries it, the retry is refused because the object now exists; the store
// must recognise its own object (its write id) and report success, and must still report
// ErrExists for another writer's object.
func TestS3RetryAfterALostSuccessIsNotExists(t *testing.T) {
	w := newWorld(t)
	proxy := startConditionProxy(t, w.srv, false, false)
	proxy.mu.Lock()
	proxy.loseSuccess = true
	proxy.mu.Unlock()
	st := w.store("lost", func(cfg *objstore.S3Config) { cfg.Endpoint = proxy.srv.URL })
	ctx := context.Background()
	for _, size := range []int{1000, 11 * mib} {
		key := fmt.Sprintf("f%d", size)
		data := randomBytes(uint64(size), size)
		info, err := st.Create(ctx, key, bytes.NewReader(data), -1)
		if err != nil {
			t.Fatalf("%d bytes whose first success was lost: %v", size, err)
		}
		if held, _ := w.held("lost/" + key); !bytes.Equal(held, data) || info.Size != int64(size) {
			t.Fatalf("%d bytes: the server holds %d bytes, create said %+v", size, len(held), info)
		}
		if _, err := st.Create(ctx, key, bytes.NewReader(randomBytes(9, size)), -1); !errors.Is(err, objstore.ErrExists) {
			t.Fatalf("%d bytes: another write of the key: %v, want ErrExists", size, err)
		}
	}
	proxy.mu.Lock()
	lost := proxy.lostPut && proxy.lostComplete
	proxy.mu.Unlock()
	if !lost {
		t.Fatal("the proxy lost no answer: the test did not test")
	}
	if n := w.pendingUploads(); n != 0 {
		t.Errorf("%d multipart uploads left open", n)
	}
}
