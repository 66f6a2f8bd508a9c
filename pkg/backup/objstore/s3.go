package objstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config says where and how to reach a bucket.
type S3Config struct {
	// Endpoint is the S3-compatible service: an http:// or https:// URL (the API's endpointURL),
	// or host[:port], which means https unless Insecure. Empty is AWS S3 (s3.amazonaws.com).
	Endpoint string
	// Region of the bucket; empty lets the client discover it.
	Region string
	Bucket string
	// Prefix under which every key lives; ValidatePrefix's rules apply, a leading "/" is ignored.
	Prefix string
	// AccessKey and SecretKey are the static credentials (the profile's credentials Secret).
	AccessKey, SecretKey string
	// Insecure makes a host[:port] Endpoint plain HTTP. It never disables certificate checks.
	Insecure bool
	// CA is PEM: certificate authorities trusted for the endpoint in addition to the system's.
	CA []byte
	// MaxParts is the most parts the store accepts in one multipart upload (0 = 10,000).
	MaxParts int
	// PartSize is the multipart part size and the largest single PUT (0 = 16 MiB; 5 MiB..5 GiB).
	PartSize int64
	// PathStyle addresses the bucket as a path (endpoint/bucket/key), the API's forcePathStyle.
	// Without it minio-go chooses: a virtual host (bucket.endpoint) for AWS, Google Cloud Storage
	// and Aliyun endpoints when the bucket name allows it, a path for every other endpoint.
	PathStyle bool
}

// s3Store is a Store on one bucket and prefix.
type s3Store struct {
	core     *minio.Core
	bucket   string
	prefix   string // "" or without leading and trailing "/"
	partSize int64
	maxParts int
	limits   partLimits
	bufs     sync.Pool // *[]byte of partSize, reused across Creates

	probeMu sync.Mutex
	probed  bool
}

// NewS3 returns the S3 store for cfg. It checks the configuration only; Probe is the first call
// that reaches the server.
func NewS3(cfg S3Config) (Store, error) {
	return newS3(cfg, s3Limits)
}

func newS3(cfg S3Config, limits partLimits) (*s3Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3 store: bucket is empty")
	}
	prefix := ""
	if cfg.Prefix != "" {
		p, err := cleanPrefix(cfg.Prefix)
		if err != nil {
			return nil, fmt.Errorf("s3 store: %w", err)
		}
		prefix = p
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("s3 store: the access key and the secret key are both required")
	}
	if cfg.MaxParts == 0 {
		cfg.MaxParts = MaxPartsLimit
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	if err := limits.checkPartConfig(cfg.PartSize, cfg.MaxParts); err != nil {
		return nil, fmt.Errorf("s3 store: %w", err)
	}
	host, secure, err := parseEndpoint(cfg.Endpoint, cfg.Insecure)
	if err != nil {
		return nil, fmt.Errorf("s3 store: %w", err)
	}
	transport, err := newTransport(secure, cfg.CA)
	if err != nil {
		return nil, fmt.Errorf("s3 store: %w", err)
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	core, err := minio.NewCore(host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       secure,
		Region:       cfg.Region,
		Transport:    transport,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 store: %w", err)
	}
	return &s3Store{core: core, bucket: cfg.Bucket, prefix: prefix, partSize: cfg.PartSize,
		maxParts: cfg.MaxParts, limits: limits}, nil
}

// parseEndpoint returns minio's host[:port] and whether to use TLS.
func parseEndpoint(endpoint string, insecure bool) (string, bool, error) {
	if endpoint == "" {
		if insecure {
			return "", false, errors.New("AWS S3 (an empty endpoint) is only reachable over https; Insecure must be false")
		}
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(endpoint, "://") {
		return endpoint, !insecure, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", false, fmt.Errorf("endpoint %q must be scheme://host[:port] with no path, query or user", endpoint)
	}
	switch u.Scheme {
	case "http":
		return u.Host, false, nil
	case "https":
		if insecure {
			return "", false, fmt.Errorf("endpoint %q is https but Insecure is set", endpoint)
		}
		return u.Host, true, nil
	}
	return "", false, fmt.Errorf("endpoint %q: scheme must be http or https", endpoint)
}

func newTransport(secure bool, ca []byte) (http.RoundTripper, error) {
	t, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, err
	}
	if testDial != nil {
		t.DialContext = testDial
	}
	if len(ca) == 0 {
		return certErrorTransport{t}, nil
	}
	if !secure {
		return nil, errors.New("a CA bundle is given but the endpoint is plain HTTP")
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("the CA bundle holds no PEM certificate")
	}
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	t.TLSClientConfig.RootCAs = pool
	return certErrorTransport{t}, nil
}

// testDial replaces the transport's dialer in tests (export_test.go), so that a request for an
// AWS host name reaches a loopback server and the addressing minio-go chose can be seen.
var testDial func(ctx context.Context, network, addr string) (net.Conn, error)

// certErrorTransport returns an unknown-authority certificate error as the x509 error itself.
// minio-go retries every request error (ten times, with backoff) except an
// x509.UnknownAuthorityError it can see directly, and crypto/tls wraps it in a
// tls.CertificateVerificationError, so a missing CA bundle would take seconds of pointless
// retries to report.
type certErrorTransport struct{ http.RoundTripper }

func (t certErrorTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(req)
	var unknown x509.UnknownAuthorityError
	if err != nil && errors.As(err, &unknown) {
		return nil, unknown
	}
	return resp, err
}

func (s *s3Store) objectKey(key string) string {
	if s.prefix == "" {
		return key
	}
	return s.prefix + "/" + key
}

func (s *s3Store) relKey(objectKey string) string {
	if s.prefix == "" {
		return objectKey
	}
	return strings.TrimPrefix(objectKey, s.prefix+"/")
}

func (s *s3Store) Location(key string) string {
	return "s3://" + s.bucket + "/" + s.objectKey(key)
}

func (s *s3Store) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	body, _, _, err := s.core.GetObject(ctx, s.bucket, s.objectKey(key), minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", s.Location(key), mapErr(err))
	}
	return body, nil
}

func (s *s3Store) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if err := validateListPrefix(prefix); err != nil {
		return nil, err
	}
	full := prefix
	if s.prefix != "" {
		full = s.prefix + "/" + prefix
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out []ObjectInfo
	for obj := range s.core.Client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: full, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("list %s: %w", s.Location(prefix), mapErr(obj.Err))
		}
		out = append(out, ObjectInfo{Key: s.relKey(obj.Key), Size: obj.Size, ETag: strings.Trim(obj.ETag, `"`)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if err := s.core.RemoveObject(ctx, s.bucket, s.objectKey(key), minio.RemoveObjectOptions{}); err != nil {
		if errors.Is(mapErr(err), ErrNotFound) {
			return nil
		}
		return fmt.Errorf("delete %s: %w", s.Location(key), mapErr(err))
	}
	return nil
}

var (
	// ErrNoSuchBucket: the configured bucket does not exist.
	ErrNoSuchBucket = errors.New("bucket does not exist")
	// ErrAccessDenied: the store refused the credentials or their permissions.
	ErrAccessDenied = errors.New("access denied")
)

// mapErr turns an S3 error response into this package's sentinels, keeping the server's words.
func mapErr(err error) error {
	resp := minio.ToErrorResponse(err)
	var sentinel error
	switch {
	case resp.StatusCode == http.StatusPreconditionFailed || resp.Code == "PreconditionFailed":
		sentinel = ErrExists
	case resp.Code == "NoSuchBucket":
		sentinel = ErrNoSuchBucket
	case resp.Code == "NoSuchKey" || (resp.StatusCode == http.StatusNotFound && resp.Code == ""):
		sentinel = ErrNotFound
	case resp.StatusCode == http.StatusForbidden || resp.Code == "AccessDenied" ||
		resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch":
		sentinel = ErrAccessDenied
	default:
		return err
	}
	return fmt.Errorf("%w (%v)", sentinel, err)
}
