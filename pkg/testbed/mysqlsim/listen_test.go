package mysqlsim_test

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// TestAKernelChosenPortIsNotReusedAfterACrash: a server given port 0
// listens, for both of its interfaces, on a port outside the kernel's
// ephemeral range (leased), so while it is down no ":0" listener or
// outgoing connection can take the port its restart needs.
func TestAKernelChosenPortIsNotReusedAfterACrash(t *testing.T) {
	low, high := ephemeralRange(t)
	srv := simtest.Start(t, mysqlsim.Config{AdminAddr: "127.0.0.1:0"})
	addrs := []string{srv.Addr(), srv.AdminAddr()}
	for _, a := range addrs {
		if p := portOf(t, a); p >= low && p <= high {
			t.Fatalf("listening on %s: inside the kernel's ephemeral range %d-%d", a, low, high)
		}
	}
	srv.Crash()
	// Take many kernel-chosen ports while the server is down: none is its.
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range 200 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
	}
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart after 200 kernel-chosen listeners: %v", err)
	}
	if got := []string{srv.Addr(), srv.AdminAddr()}; got[0] != addrs[0] || got[1] != addrs[1] {
		t.Fatalf("after the restart %v; want the same %v", got, addrs)
	}
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ephemeralRange(t *testing.T) (int, int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral port range to compare with: %v", err)
	}
	f := strings.Fields(string(b))
	low, _ := strconv.Atoi(f[0])
	high, _ := strconv.Atoi(f[1])
	return low, high
}
