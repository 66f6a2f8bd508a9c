package objstore_test

import (
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/backup/objstore"
)

// TestValidatePrefix holds ValidatePrefix to the v1.7.0 rules of the API's S3Storage.prefix.
func TestValidatePrefix(t *testing.T) {
	long := strings.Repeat("a", 512)
	for prefix, ok := range map[string]bool{
		"prod": true, "/prod": true, "team/prod/mysql": true, "a.b/c-d_e": true, "...": true, long: true,
		"/" + long[1:]: true,
		"":             false, "/": false, "a//b": false, "a/": false, "//a": false,
		".": false, "..": false, "a/./b": false, "a/../b": false, "/..": false, long + "a": false,
	} {
		err := objstore.ValidatePrefix(prefix)
		if (err == nil) != ok {
			t.Errorf("ValidatePrefix(%q) = %v, want ok=%v", prefix, err, ok)
		}
	}
}

func TestNewS3RefusesBadConfig(t *testing.T) {
	good := objstore.S3Config{Endpoint: "http://127.0.0.1:1", Bucket: "b", Prefix: "p", AccessKey: "a", SecretKey: "s"}
	if _, err := objstore.NewS3(good); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for name, edit := range map[string]func(*objstore.S3Config){
		"no bucket":       func(c *objstore.S3Config) { c.Bucket = "" },
		"bad prefix":      func(c *objstore.S3Config) { c.Prefix = "a//b" },
		"no access key":   func(c *objstore.S3Config) { c.AccessKey = "" },
		"no secret key":   func(c *objstore.S3Config) { c.SecretKey = "" },
		"small parts":     func(c *objstore.S3Config) { c.PartSize = 1 << 20 },
		"too many parts":  func(c *objstore.S3Config) { c.MaxParts = 10001 },
		"CA on plain":     func(c *objstore.S3Config) { c.CA = []byte("x") },
		"CA without PEM":  func(c *objstore.S3Config) { c.Endpoint, c.CA = "https://127.0.0.1:1", []byte("not pem") },
		"https, insecure": func(c *objstore.S3Config) { c.Endpoint, c.Insecure = "https://127.0.0.1:1", true },
	} {
		cfg := good
		edit(&cfg)
		if _, err := objstore.NewS3(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
