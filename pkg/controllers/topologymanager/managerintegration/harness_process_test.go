package managerintegration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/shipstream/bloodraven/e2e/framework"
)

// Each site's mysqld has a process the sidecar can stop, as it can in a
// pod with a shared process namespace: a stand-in child process (sleep)
// whose PID is in the site's pid file (sidecar.Config.MySQLPIDFile). The
// simulated mysqld runs in the test process, so the stand-in's death is
// what makes it crash: the moment the harness sees the stand-in end, it
// crashes the simulator (every connection drops, nothing more commits).
// The sidecar counts the stand-in's zombie as gone, so when it stops the
// stand-in itself it may confirm its fence, and prove the exit, a few
// microseconds before the simulator has crashed; a promotion on that proof
// needs at least two status writes more, which take milliseconds.
//
// After a stop by the sidecar, the container runtime restarts mysqld
// (kubeletRestart later): it starts read-only, as the rendered my.cnf
// starts it, and a freeze is gone with the process that was frozen.

// kubeletRestart is how long after mysqld's process ended it is started
// again.
const kubeletRestart = time.Second

// mysqldProcess is a site's stand-in process and what ended it.
type mysqldProcess struct {
	mu      sync.Mutex
	pidFile string
	proc    *framework.Process
	crashed bool // the harness ended it (a crash fault), not the sidecar
	closed  bool // the test is over: nothing restarts
}

var sleepBin = sync.OnceValues(func() (string, error) { return exec.LookPath("sleep") })

// startProcess starts hs's stand-in and names it in the pid file.
func (f *fabric) startProcess(hs *harnessSite) {
	t := f.e.t
	m := &hs.proc
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pidFile = filepath.Join(t.TempDir(), hs.name+".pid")
	t.Cleanup(func() { f.endProcess(hs) })
	if err := f.startProcessLocked(hs); err != nil {
		t.Fatal(err)
	}
}

// startProcessLocked starts a stand-in and writes its pid file. It may run
// on any goroutine (a restart), so it reports errors rather than failing
// the test itself.
func (f *fabric) startProcessLocked(hs *harnessSite) error {
	m := &hs.proc
	bin, err := sleepBin()
	if err != nil {
		return fmt.Errorf("mysqld stand-in: %w", err)
	}
	p, err := framework.StartProcess("mysqld-"+hs.name, bin, []string{"100000"}, nil, m.pidFile+".log")
	if err != nil {
		return fmt.Errorf("mysqld stand-in of %s: %w", hs.name, err)
	}
	m.proc, m.crashed = p, false
	go f.watchProcess(hs, p)
	tmp := m.pidFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(p.PID())+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, m.pidFile) // the sidecar never reads half a pid
}

// watchProcess crashes the simulator when its stand-in ends other than by
// the harness's own hand, and has it restarted as the kubelet would.
func (f *fabric) watchProcess(hs *harnessSite, p *framework.Process) {
	<-p.Done()
	m := &hs.proc
	m.mu.Lock()
	if m.proc != p || m.crashed || m.closed {
		m.mu.Unlock()
		return
	}
	hs.sim.Crash()
	m.proc = nil
	hs.stops.Add(1)
	f.e.t.Logf("%s: mysqld's process stopped by its sidecar; restarted read-only in %s", hs.name, kubeletRestart)
	m.mu.Unlock()
	time.Sleep(kubeletRestart)
	f.restartMySQLD(hs)
}

// crash crashes site s's mysqld: the simulator stops (every connection
// drops, nothing more commits), then its process ends (the pid file keeps
// the dead process's id, as a crashed mysqld leaves it). In that order: a
// sidecar that sees the process gone may prove it at once, and by then
// nothing may commit any more, as with a real mysqld.
func (f *fabric) crash(s string) {
	hs := f.sites[s]
	m := &hs.proc
	m.mu.Lock()
	defer m.mu.Unlock()
	hs.sim.Crash()
	if m.proc != nil {
		m.crashed = true
		_ = m.proc.Stop(time.Second)
		m.proc = nil
	}
}

// restartMySQLD starts a stopped mysqld again: not frozen, at MySQL's
// default max_connections, read-only, with a new process. It does nothing
// if mysqld runs.
func (f *fabric) restartMySQLD(hs *harnessSite) {
	m := &hs.proc
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || hs.sim.Running() && m.proc != nil {
		return
	}
	if hs.frozen.Load() {
		// The frozen process is gone; its sessions ended with it, so the
		// thaw releases nothing.
		hs.thawedAt.Store(time.Now().UnixNano())
		hs.sim.Thaw()
		hs.frozen.Store(false)
	}
	hs.sim.SetMaxConnections(0)
	if !hs.sim.Running() {
		if err := hs.sim.Restart(); err != nil {
			f.e.t.Logf("%s: restart: %v", hs.name, err)
			return
		}
	}
	if m.proc == nil {
		if err := f.startProcessLocked(hs); err != nil {
			f.e.t.Errorf("%s: %v", hs.name, err)
		}
	}
}

// endProcess stops the stand-in at cleanup, by its PID.
func (f *fabric) endProcess(hs *harnessSite) {
	m := &hs.proc
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.proc != nil {
		m.crashed = true
		_ = m.proc.Stop(time.Second)
		m.proc = nil
	}
}
