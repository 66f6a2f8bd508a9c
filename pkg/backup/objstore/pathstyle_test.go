package objstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/objstore"
)

// forcePathStyle is honoured: against an AWS endpoint, where minio-go would otherwise address
// the bucket as a virtual host, the request names the endpoint and puts the bucket in the path.
// The requests reach a loopback server that records them and answers that nothing exists.
func TestPathStyleAddressesTheBucketAsAPath(t *testing.T) {
	var mu sync.Mutex
	var hosts, paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts, paths = append(hosts, r.Host), append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>none</Message></Error>`))
	}))
	t.Cleanup(srv.Close)
	objstore.DialEverythingTo(t, srv.Listener.Addr().String())

	for _, c := range []struct {
		pathStyle bool
		virtual   bool // the host begins with the bucket's name
		pathHead  string
	}{
		{true, false, "/backups-bucket/prod/"},
		{false, true, "/prod/"}, // minio-go's choice for an AWS endpoint
	} {
		mu.Lock()
		hosts, paths = nil, nil
		mu.Unlock()
		st, err := objstore.NewS3(objstore.S3Config{Endpoint: "http://s3.us-east-1.amazonaws.com", Region: "us-east-1",
			Bucket: "backups-bucket", Prefix: "prod", AccessKey: "AKIAEXAMPLE", SecretKey: "secret", PathStyle: c.pathStyle})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Open(context.Background(), "x/stamp.json"); !errors.Is(err, objstore.ErrNotFound) {
			t.Fatalf("pathStyle %v: open: %v", c.pathStyle, err)
		}
		mu.Lock()
		if len(hosts) == 0 || strings.HasPrefix(hosts[0], "backups-bucket.") != c.virtual || !strings.HasSuffix(hosts[0], ".amazonaws.com") ||
			!strings.HasPrefix(paths[0], c.pathHead) {
			t.Errorf("pathStyle %v: requests to %v, paths %v; want the bucket in the host %v and a path under %s", c.pathStyle, hosts, paths, c.virtual, c.pathHead)
		}
		mu.Unlock()
	}
}
