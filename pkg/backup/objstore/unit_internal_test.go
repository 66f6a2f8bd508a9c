package objstore

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

func TestPlanPartSize(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		size     int64
		partSize int64
		maxParts int
		want     int64
		tooLarge bool
	}{
		{size: -1, partSize: 16 * mib, maxParts: 10000, want: 16 * mib},
		{size: 0, partSize: 16 * mib, maxParts: 10000, want: 16 * mib},
		{size: 10000 * 16 * mib, partSize: 16 * mib, maxParts: 10000, want: 16 * mib},
		// one byte more than 10,000 parts hold: parts grow to the next whole MiB
		{size: 10000*16*mib + 1, partSize: 16 * mib, maxParts: 10000, want: 17 * mib},
		// 1,000 parts: a 100 GiB object needs parts of 102.4 MiB, rounded up to 103 MiB
		{size: 100 << 30, partSize: 16 * mib, maxParts: 1000, want: 103 * mib},
		// 1,000 parts of at most 5 GiB: 5,000 GiB fit, one byte more does not
		{size: 1000 * MaxPartSize, partSize: 16 * mib, maxParts: 1000, want: MaxPartSize},
		{size: 1000*MaxPartSize + 1, partSize: 16 * mib, maxParts: 1000, tooLarge: true},
	}
	for _, c := range cases {
		got, err := s3Limits.planPartSize(c.size, c.partSize, c.maxParts)
		if c.tooLarge {
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("size %d, %d parts: %v, want ErrTooLarge", c.size, c.maxParts, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("size %d, part %d, %d parts: %d, %v; want %d", c.size, c.partSize, c.maxParts, got, err, c.want)
		}
		if c.size > 0 && got*int64(c.maxParts) < c.size {
			t.Errorf("size %d: %d parts of %d hold less", c.size, c.maxParts, got)
		}
	}
}

func TestCheckPartConfig(t *testing.T) {
	for _, c := range []struct {
		partSize int64
		maxParts int
		ok       bool
	}{
		{MinPartSize, 1, true}, {MaxPartSize, MaxPartsLimit, true}, {DefaultPartSize, 1000, true},
		{MinPartSize - 1, 1000, false}, {MaxPartSize + 1, 1000, false}, {DefaultPartSize, 0, false},
		{DefaultPartSize, MaxPartsLimit + 1, false},
	} {
		if err := s3Limits.checkPartConfig(c.partSize, c.maxParts); (err == nil) != c.ok {
			t.Errorf("part %d, %d parts: %v, want ok=%v", c.partSize, c.maxParts, err, c.ok)
		}
	}
}

func TestParseEndpoint(t *testing.T) {
	for _, c := range []struct {
		endpoint string
		insecure bool
		host     string
		secure   bool
		bad      bool
	}{
		{endpoint: "", host: "s3.amazonaws.com", secure: true},
		{endpoint: "", insecure: true, bad: true},
		{endpoint: "https://s3.eu-west-1.amazonaws.com", host: "s3.eu-west-1.amazonaws.com", secure: true},
		{endpoint: "http://minio.storage:9000", host: "minio.storage:9000"},
		{endpoint: "http://minio.storage:9000/", host: "minio.storage:9000"},
		{endpoint: "minio.storage:9000", host: "minio.storage:9000", secure: true},
		{endpoint: "minio.storage:9000", insecure: true, host: "minio.storage:9000"},
		{endpoint: "https://x", insecure: true, bad: true},
		{endpoint: "ftp://x", bad: true},
		{endpoint: "http://x/bucket", bad: true},
		{endpoint: "http://user:pw@x", bad: true},
		{endpoint: "http://", bad: true},
	} {
		host, secure, err := parseEndpoint(c.endpoint, c.insecure)
		if c.bad {
			if err == nil {
				t.Errorf("%q insecure=%v accepted as %s", c.endpoint, c.insecure, host)
			}
			continue
		}
		if err != nil || host != c.host || secure != c.secure {
			t.Errorf("%q insecure=%v: %q secure=%v %v; want %q secure=%v", c.endpoint, c.insecure, host, secure, err, c.host, c.secure)
		}
	}
}

func TestMountInfoHas(t *testing.T) {
	info := `22 27 0:21 / /proc rw,relatime - proc proc rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
90 27 254:0 /var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/pvc-1/mount /backup\040store rw,relatime - ext4 /dev/vdb rw
`
	for path, want := range map[string]bool{
		"/dev/shm": true, "/": true, "/backup store": true, "/backup": false, "/dev": false, "/proc/self": false,
	} {
		got, err := mountInfoHas(bufio.NewScanner(strings.NewReader(info)), path)
		if err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", path, got, err, want)
		}
	}
	if got := unescapeMountField(`a\011b\134c\012`); got != "a\tb\\c\n" {
		t.Errorf("unescape: %q", got)
	}
	if got := unescapeMountField(`end\04`); got != `end\04` {
		t.Errorf("a short escape changed: %q", got)
	}
}
