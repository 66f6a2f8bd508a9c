package upload

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shipstream/bloodraven/pkg/backup/envelope"
	"github.com/shipstream/bloodraven/pkg/backup/objstore"
)

// openStore opens the profile's store from the mounted files a names.
// Errors name the file, never its content. requireMountPoint is the v1.7.0
// rule for PVC stores, always on in Run: the claim must be mounted at the
// configured path, or writes would land in the container's own filesystem
// and vanish with it.
func openStore(a Args, requireMountPoint bool) (objstore.Store, error) {
	switch a.StoreType {
	case StoreS3:
		return openS3(a)
	case StorePVC:
		s, err := objstore.NewDir(a.PVCClaim, a.PVCMountPath, requireMountPoint)
		if err != nil {
			return nil, fmt.Errorf("PVC store %s at %s: %w", a.PVCClaim, a.PVCMountPath, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("store type %q is neither S3 nor PVC", a.StoreType)
}

func openS3(a Args) (objstore.Store, error) {
	access, err := readSecretFile(filepath.Join(a.S3CredentialsDir, AccessKeyFile), "S3 access key")
	if err != nil {
		return nil, err
	}
	secret, err := readSecretFile(filepath.Join(a.S3CredentialsDir, SecretKeyFile), "S3 secret key")
	if err != nil {
		return nil, err
	}
	var ca []byte
	if a.S3CAFile != "" {
		if ca, err = os.ReadFile(a.S3CAFile); err != nil {
			return nil, fmt.Errorf("reading the S3 CA bundle: %w", err)
		}
	}
	s, err := objstore.NewS3(objstore.S3Config{
		Endpoint: a.S3Endpoint, Region: a.S3Region, Bucket: a.S3Bucket, Prefix: a.S3Prefix,
		AccessKey: string(access), SecretKey: string(secret), CA: ca, PathStyle: a.S3BucketLookup == S3BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 store s3://%s/%s: %w", a.S3Bucket, a.S3Prefix, err)
	}
	return s, nil
}

// readSecretFile reads one mounted Secret key. Surrounding whitespace is
// dropped (a Secret made with `echo` ends in a newline); an empty value is
// an error. The error names the file, never the value.
func readSecretFile(path, what string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the %s: %w", what, err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("the %s file %s is empty", what, path)
	}
	return b, nil
}

// readPassphrase reads the key snapshot's passphrase file; no file, no
// encryption (nil).
func readPassphrase(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the passphrase: %w", err)
	}
	p, err := envelope.Passphrase(raw)
	if err != nil {
		return nil, fmt.Errorf("the passphrase file %s: %w", path, err)
	}
	return p, nil
}
