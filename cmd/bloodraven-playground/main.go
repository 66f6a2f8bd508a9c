// Command bloodraven-playground runs the local playground (see
// docs/playground.md):
//
//	bloodraven-playground run    # in the foreground until Ctrl-C
//	bloodraven-playground up     # detached; returns once the group is Ready
//	bloodraven-playground down   # stops what `up` started
//
// Every process it starts is its child, tracked by PID, stopped on Ctrl-C
// or SIGTERM, and killed by the kernel if the playground itself dies.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shipstream/bloodraven/e2e/framework"
	"github.com/shipstream/bloodraven/pkg/logging"
	"github.com/shipstream/bloodraven/pkg/testbed/playground"
)

func main() {
	if len(os.Args) < 2 {
		usage(os.Stderr)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:], false)
	case "serve": // what `up` runs in the background
		err = run(os.Args[2:], true)
	case "up":
		err = up(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "bench-failover":
		err = benchFailover(os.Args[2:])
	case "-h", "--help", "help":
		usage(os.Stdout)
		return
	default:
		usage(os.Stderr)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bloodraven-playground:", err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `usage: bloodraven-playground run|up|down [flags]
  run   bring the playground up in the foreground; Ctrl-C stops everything
  up    bring it up in the background, write the env file, return once the group is Ready
  down  stop the playground started by up
  bench-failover [-k N] [-settings 2s:3,1s:2] [-drills crash,frozen,isolated,planned] [-keep-logs]
        run N drills of each kind under write load per pollInterval:failureThreshold setting
        (one playground each) and print min/p50/p99/max of fault to published, the write
        gap, possibly-lost GTIDs and missing acknowledged writes (docs/playground.md)
flags: -state-dir DIR (default bin/playground), -ready-timeout D (default 3m)`)
}

type options struct {
	stateDir     string
	readyTimeout time.Duration
	groupPatch   string
	faultProxies bool
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bloodraven-playground", flag.ContinueOnError)
	fs.StringVar(&o.stateDir, "state-dir", filepath.Join(framework.BinDir(), "playground"), "where up/down keep the PID file, the env file and the log")
	fs.DurationVar(&o.readyTimeout, "ready-timeout", 3*time.Minute, "how long to wait for the group's Ready condition")
	fs.StringVar(&o.groupPatch, "group-patch", "", "JSON merge patch applied to the sample group before it is created")
	fs.BoolVar(&o.faultProxies, "fault-proxies", true, "put a fault-injecting proxy on every operator and sidecar link (controlled through the playground's control API)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

func (o options) pidFile() string  { return filepath.Join(o.stateDir, "playground.pid") }
func (o options) envFile() string  { return filepath.Join(o.stateDir, "env") }
func (o options) logFile() string  { return filepath.Join(o.stateDir, "playground.log") }
func (o options) failFile() string { return filepath.Join(o.stateDir, "failed") }

// run brings the playground up and keeps it until SIGINT/SIGTERM. detached
// (under `up`) it writes the env file once the group is Ready.
func run(args []string, detached bool) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	log := logging.New(os.Stderr, slog.LevelInfo)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	p, err := playground.Start(ctx, playground.Config{Logger: log, GroupPatch: o.groupPatch, FaultProxies: o.faultProxies})
	if err != nil {
		return fail(o, detached, err)
	}
	defer p.Stop()
	if o.faultProxies {
		if _, err := p.ServeControl(ctx); err != nil {
			return fail(o, detached, err)
		}
	}
	fmt.Fprintf(os.Stderr, "waiting for group %s/%s to become Ready (logs in %s)...\n", p.Namespace, p.Group, p.Dir)
	if err := p.WaitGroupReady(ctx, o.readyTimeout); err != nil {
		return fail(o, detached, err)
	}
	took := time.Since(start).Round(100 * time.Millisecond)
	token, err := p.MintToken(ctx)
	if err != nil {
		return fail(o, detached, err)
	}
	fmt.Println(p.Banner(token))
	fmt.Printf("Up in %s.\n", took)
	if detached {
		if err := writeAtomic(o.envFile(), p.EnvFile()); err != nil {
			return fail(o, detached, err)
		}
	}
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping the playground...")
	return nil
}

func fail(o options, detached bool, err error) error {
	if detached {
		_ = writeAtomic(o.failFile(), err.Error()+"\n")
	}
	return err
}

func writeAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// up starts `serve` as a detached child and waits for its env file.
func up(args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	if pid, ok := runningPID(o); ok {
		return fmt.Errorf("a playground is already running (pid %d); run `make playground-down` first", pid)
	}
	if err := os.MkdirAll(o.stateDir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{o.envFile(), o.failFile(), o.pidFile()} {
		_ = os.Remove(f)
	}
	logf, err := os.Create(o.logFile())
	if err != nil {
		return err
	}
	defer logf.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, append([]string{"serve"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: it outlives this command and the terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	if err := writeAtomic(o.pidFile(), strconv.Itoa(pid)+"\n"); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	start := time.Now()
	for {
		if b, err := os.ReadFile(o.envFile()); err == nil {
			fmt.Printf("playground is up (pid %d, %s). Environment: %s\n\n%s\nStop it with `make playground-down`.\n",
				pid, time.Since(start).Round(100*time.Millisecond), o.envFile(), b)
			return nil
		}
		select {
		case err := <-exited:
			_ = os.Remove(o.pidFile())
			msg, _ := os.ReadFile(o.failFile())
			return fmt.Errorf("the playground exited (%v): %s(log: %s)", err, msg, o.logFile())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// down stops the playground `up` started, by the PID it recorded.
func down(args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	pid, ok := runningPID(o)
	if !ok {
		fmt.Println("no playground is running")
		_ = os.Remove(o.pidFile())
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signal playground (pid %d): %w", pid, err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // its children die with it (Pdeathsig)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, f := range []string{o.envFile(), o.pidFile(), o.failFile()} {
		_ = os.Remove(f)
	}
	fmt.Printf("playground (pid %d) stopped\n", pid)
	return nil
}

// runningPID is the recorded playground PID if that process is still a
// bloodraven-playground (the PID may have been reused).
func runningPID(o options) (int, bool) {
	b, err := os.ReadFile(o.pidFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || !alive(pid) {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "bloodraven-playground") {
		return 0, false
	}
	return pid, true
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err == nil || errors.Is(err, syscall.EPERM) {
		// A zombie still answers signal 0; it is gone for our purpose.
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return !strings.Contains(string(st), ") Z ")
	}
	return false
}
