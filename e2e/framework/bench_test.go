package framework

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStart measures how long a control plane takes from nothing to a
// ready kube-apiserver (etcd healthy + /readyz ok), and reports each
// process's resident memory once ready:
//
//	go test ./e2e/framework -run '^$' -bench Start -benchtime 3x
func BenchmarkStart(b *testing.B) {
	for _, withKCM := range []bool{false, true} {
		name := "etcd+apiserver"
		if withKCM {
			name = "etcd+apiserver+controller-manager"
		}
		b.Run(name, func(b *testing.B) {
			rss := map[string]float64{}
			var readyMillis float64
			for range b.N {
				start := time.Now()
				cp, err := Start(context.Background(), Options{ControllerManager: withKCM})
				if err != nil {
					b.Fatal(err)
				}
				readyMillis += float64(time.Since(start).Milliseconds())
				if withKCM {
					time.Sleep(5 * time.Second) // let the controllers start their informers
				}
				for proc, pid := range cp.PIDs() {
					rss[proc] += float64(residentKiB(pid)) / 1024
				}
				cp.Stop()
			}
			b.ReportMetric(readyMillis/float64(b.N), "ms-to-readyz")
			for proc, total := range rss {
				b.ReportMetric(total/float64(b.N), proc+"-RSS-MiB")
			}
		})
	}
}

func residentKiB(pid int) int {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kib
		}
	}
	return 0
}
