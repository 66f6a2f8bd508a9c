package upload

import (
	"path/filepath"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/objstore"
	"github.com/shipstream/bloodraven/pkg/testbed/s3server"
)

// s3World is a real versitygw with a bucket of its own; what it holds is
// read from its posix backend's files (one per object, named by key), not
// through the S3 client under test.
func s3World(t *testing.T) *world {
	t.Helper()
	srv := s3server.StartT(t)
	const bucket, prefix = "backups", "prod/orders"
	if err := srv.Bucket(bucket); err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	writeFile(t, filepath.Join(creds, AccessKeyFile), srv.AccessKey+"\n")
	writeFile(t, filepath.Join(creds, SecretKeyFile), srv.SecretKey+"\n")
	root := filepath.Join(srv.DataDir(), bucket, filepath.FromSlash(prefix))
	a := Args{StoreType: StoreS3, S3Endpoint: srv.Endpoint(), S3Region: s3server.Region, S3Bucket: bucket,
		S3Prefix: prefix, S3CredentialsDir: creds}
	return fileWorld(t, root, a, func(a Args) (objstore.Store, error) { return openStore(a, true) })
}
