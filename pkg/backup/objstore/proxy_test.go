package objstore_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/shipstream/bloodraven/pkg/testbed/s3server"
)

// conditionProxy stands between the store and versitygw on loopback. It can make the pair behave
// like an S3 store that ignores If-None-Match: it removes the header from the chosen requests and
// signs them again with the server's credentials (the header is part of the signature), so the
// server sees an ordinary unconditional write. It also records the part numbers uploaded.
type conditionProxy struct {
	srv         *httptest.Server
	stripSingle bool // PUT of a whole object
	stripMulti  bool // CreateMultipartUpload and CompleteMultipartUpload
	corrupt     bool // flip the first byte of every PUT body, leaving its signature as it was
	// loseSuccess answers 502 Bad Gateway instead of the server's success, once, to the first
	// conditional single PUT and the first CompleteMultipartUpload: the write happened, the
	// client does not know it and retries.
	loseSuccess  bool
	lostPut      bool
	lostComplete bool

	mu       sync.Mutex
	stripped int
	maxPart  int
	parts    int
}

func startConditionProxy(t *testing.T, s *s3server.Server, stripSingle, stripMulti bool) *conditionProxy {
	t.Helper()
	target, err := url.Parse(s.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	p := &conditionProxy{stripSingle: stripSingle, stripMulti: stripMulti}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host // the client signed this host
		p.observe(pr.Out, s)
	}, ModifyResponse: p.maybeLose}
	p.srv = httptest.NewServer(rp) // listens on 127.0.0.1
	t.Cleanup(p.srv.Close)
	return p
}

func (p *conditionProxy) observe(req *http.Request, s *s3server.Server) {
	q := req.URL.Query()
	_, isUploadsInit := q["uploads"]
	single := req.Method == http.MethodPut && !q.Has("uploadId")
	multi := req.Method == http.MethodPost && (q.Has("uploadId") || isUploadsInit)
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.Method == http.MethodPut && q.Has("partNumber") {
		n, _ := strconv.Atoi(q.Get("partNumber"))
		p.parts++
		p.maxPart = max(p.maxPart, n)
	}
	if p.corrupt && req.Method == http.MethodPut && req.ContentLength > 0 {
		body, _ := io.ReadAll(req.Body)
		_ = req.Body.Close()
		body[0] ^= 0xff
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if req.Header.Get("If-None-Match") == "" || !((single && p.stripSingle) || (multi && p.stripMulti)) {
		return
	}
	req.Header.Del("If-None-Match")
	req.Header.Del("Authorization")
	if req.Header.Get("X-Amz-Content-Sha256") == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" {
		panic("a streaming-signed request: its chunk signatures chain from the request's signature, which re-signing changes")
	}
	*req = *signer.SignV4(*req, s.AccessKey, s.SecretKey, "", s3server.Region)
	p.stripped++
}

func (p *conditionProxy) maybeLose(resp *http.Response) error {
	req := resp.Request
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loseSuccess || resp.StatusCode != http.StatusOK {
		return nil
	}
	q := req.URL.Query()
	switch {
	case req.Method == http.MethodPut && !q.Has("uploadId") && req.Header.Get("If-None-Match") != "" && !p.lostPut:
		p.lostPut = true
	case req.Method == http.MethodPost && q.Has("uploadId") && !p.lostComplete:
		p.lostComplete = true
	default:
		return nil
	}
	return errors.New("answer lost on purpose")
}

func (p *conditionProxy) counts() (stripped, parts, maxPart int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stripped, p.parts, p.maxPart
}
