package objstore

import (
	"context"
	"net"
)

// NewS3WithMinPartSize is NewS3 with a smaller minimum part size, for the tests of the part-limit
// refusal: a refused upload is aborted before its completion, the only step at which an S3 store
// checks part sizes, so small parts exercise the 1,000-part limit without uploading 5 GB.
func NewS3WithMinPartSize(cfg S3Config, minPartSize int64) (Store, error) {
	limits := s3Limits
	limits.minPartSize = minPartSize
	return newS3(cfg, limits)
}

// DialEverythingTo makes every S3 store created from now until the test ends connect to addr,
// whatever host its requests name. The hook is package-wide: a test that sets it must not run in
// parallel with others (none in this package does).
func DialEverythingTo(t interface{ Cleanup(func()) }, addr string) {
	testDial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	t.Cleanup(func() { testDial = nil })
}
