package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shipstream/bloodraven/pkg/protocol"
)

// procIdentity names one process for as long as the kernel may reuse its
// pid: the pid and its start time (proc(5), /proc/pid/stat field 22, in
// clock ticks since boot), plus the container its cgroup names, if any.
type procIdentity struct {
	pid       int
	startTime uint64
	container string
}

// containerID is what Instance.ContainerID reports for the process.
func (p procIdentity) containerID() string {
	if p.container != "" {
		return p.container
	}
	return fmt.Sprintf("process:%d:%d", p.pid, p.startTime)
}

// errNoProcess: the pid names no running process (none, or a zombie).
var errNoProcess = errors.New("no such running process")

// identify reads pid's identity from /proc. errNoProcess means the process
// has ended (a zombie holds no sockets and writes nothing).
func identify(pid int) (procIdentity, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return procIdentity{}, errNoProcess
	}
	if err != nil {
		return procIdentity{}, err
	}
	// The command name is in parentheses and may contain ") ": the fields
	// after the last ')' are state (3), ppid (4), ... starttime (22).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procIdentity{}, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return procIdentity{}, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(fields))
	}
	switch fields[0] {
	case "Z", "X", "x":
		return procIdentity{}, errNoProcess
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procIdentity{}, fmt.Errorf("/proc/%d/stat: start time %q: %w", pid, fields[19], err)
	}
	return procIdentity{pid: pid, startTime: start, container: cgroupContainer(pid)}, nil
}

// containerInCgroup matches the 64-hex-digit container ID that container
// runtimes put in a container's cgroup path (cri-containerd-<id>.scope,
// crio-<id>.scope, docker-<id>.scope, or a bare /kubepods/.../<id>).
var containerInCgroup = regexp.MustCompile(`(?:^|[/-])([0-9a-f]{64})(?:\.scope)?$`)

// cgroupContainer is the container ID in pid's cgroup path; empty outside a
// container (or without /proc/pid/cgroup).
func cgroupContainer(pid int) string {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if m := containerInCgroup.FindStringSubmatch(parts[2]); m != nil {
			return m[1]
		}
	}
	return ""
}

// instanceSeen is the mysqld instance the sidecar last saw running.
type instanceSeen struct {
	proc       procIdentity
	serverUUID string
	// exited: the latest look found this process ended and the pid file
	// naming no other running process.
	exited bool
	// err is why the latest look could not tell.
	err string
}

// lookAtProcess updates what the sidecar knows of its mysqld's process:
// the pid file names the current one; a recorded instance whose process
// ended, with no other running in its place, has exited. serverUUID is
// what mysqld answered in the same round (empty when it did not).
func (s *Sidecar) lookAtProcess(serverUUID string) {
	if s.proc == nil {
		return
	}
	cur, curErr := s.currentProcess()
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.st.instance
	switch {
	case curErr == nil:
		if inst == nil || inst.proc != cur {
			inst = &instanceSeen{proc: cur}
			s.st.instance = inst
		}
		inst.exited, inst.err = false, ""
		if serverUUID != "" {
			inst.serverUUID = serverUUID
		}
	case inst == nil:
		// Nothing was ever seen running: there is no instance to vouch for.
	case errors.Is(curErr, errNoProcess):
		inst.exited, inst.err = !alive(inst.proc), ""
	default:
		inst.exited, inst.err = false, curErr.Error()
	}
}

// currentProcess is the running process the pid file names. errNoProcess
// when the file names a process that has ended, or is missing (mysqld
// removes it at a clean shutdown); any other error means "cannot tell".
func (s *Sidecar) currentProcess() (procIdentity, error) {
	pid, err := s.proc.pid()
	if errors.Is(err, os.ErrNotExist) {
		return procIdentity{}, errNoProcess
	}
	if err != nil {
		return procIdentity{}, err
	}
	return identify(pid)
}

// alive reports whether the recorded process still runs: same pid, same
// start time (a reused pid is another process).
func alive(p procIdentity) bool {
	cur, err := identify(p.pid)
	if errors.Is(err, errNoProcess) {
		return false
	}
	return err != nil || cur.startTime == p.startTime
}

// instanceLocked is the protocol's view of the recorded instance.
func (s *Sidecar) instanceLocked() (protocol.Instance, bool) {
	inst := s.st.instance
	if inst == nil {
		return protocol.Instance{PodUID: s.cfg.PodUID}, false
	}
	return protocol.Instance{PodUID: s.cfg.PodUID, ContainerID: inst.proc.containerID(), ServerUUID: inst.serverUUID}, true
}

// ProcessCheckInterval is how often the sidecar looks at its mysqld's
// process between rounds: a few reads of /proc, so that an exit reaches
// the operator within this long (docs/topology.md, cadence).
const ProcessCheckInterval = 100 * time.Millisecond

// watchProcess looks at the process every ProcessCheckInterval and tells
// the operator when the instance it last saw running has exited.
func (s *Sidecar) watchProcess(ctx context.Context) {
	t := time.NewTicker(ProcessCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		before := s.st.instance != nil && s.st.instance.exited
		s.mu.Unlock()
		s.lookAtProcess("")
		s.mu.Lock()
		after := s.st.instance != nil && s.st.instance.exited
		s.mu.Unlock()
		if after && !before {
			s.log.Warn("mysqld process exited")
			s.pushSiteEvent(ctx, protocol.SiteEventMySQLExited)
		}
	}
}

// pushSiteEvent tells the operator's leader (asking again after a
// not-leader answer, as pollOperator does) that something happened here;
// best effort: the operator's own polls notice it anyway.
func (s *Sidecar) pushSiteEvent(ctx context.Context, kind string) {
	u := url.URL{Scheme: "http", Host: s.cfg.OperatorEndpoint, Path: protocol.PathSiteEvent,
		RawQuery: url.Values{protocol.QueryNamespace: {s.cfg.Namespace}, protocol.QueryGroup: {s.cfg.Group}}.Encode()}
	body, err := json.Marshal(protocol.SiteEvent{Site: s.cfg.Site, Kind: kind})
	if err != nil {
		return
	}
	for attempt := 0; attempt <= notLeaderRetries; attempt++ {
		err = s.postJSON(ctx, u.String(), body)
		if !protocol.IsNotLeader(err) {
			break
		}
	}
	if err != nil {
		s.log.Info("site event not delivered", "kind", kind, "err", err)
	}
}

func (s *Sidecar) postJSON(ctx context.Context, u string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, protocol.MaxBodyBytes))
		resp.Body.Close()
	}()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return protocol.DecodeResponse(resp, nil)
}
