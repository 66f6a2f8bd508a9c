package jobkubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxMessage is how much of a failed container's log becomes its
// termination message under FallbackToLogsOnError (the kubelet's 2048
// bytes).
const maxMessage = 2048

// maxMessageFile is how much of the termination-message file the kubelet
// reads into the container's status; the rest is dropped.
const maxMessageFile = 4096

// runContainer runs c to its end and returns its terminated status.
func (k *Kubelet) runContainer(ctx context.Context, p *corev1.Pod, c corev1.Container, vols map[string]string, dir, logDir string) corev1.ContainerStatus {
	start := metav1.Now()
	fail := func(code int32, err error) corev1.ContainerStatus {
		s := terminated(c, string(p.UID), code, err.Error(), start, metav1.Now())
		s.State.Terminated.Reason = "StartError"
		return s
	}
	mounts, err := mountMap(c, vols)
	if err != nil {
		return fail(128, err)
	}
	msgFile, err := messageFile(c, dir, mounts)
	if err != nil {
		return fail(128, err)
	}
	binds, err := k.claimMounts(p, c, vols)
	if err != nil {
		return fail(128, err)
	}
	env, err := k.resolveEnv(ctx, p, c)
	if err != nil {
		return fail(128, wrap("CreateContainerConfigError", err))
	}
	for i, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		env[i] = name + "=" + rewritePaths(v, mounts)
	}
	argv, err := k.command(c, env)
	if err != nil {
		return fail(128, err)
	}
	for i := 1; i < len(argv); i++ {
		argv[i] = rewritePaths(argv[i], mounts)
	}
	argv = withBindMounts(k.network(argv), binds)
	binDir, err := k.pathDir(dir, c.Name)
	if err != nil {
		return fail(128, err)
	}
	logPath := filepath.Join(logDir, c.Name+".log")
	code, err := execute(ctx, argv, append([]string{"PATH=" + binDir + ":/usr/bin:/bin", "HOME=" + dir}, env...), dir, logPath)
	if err != nil {
		return fail(128, err)
	}
	return terminated(c, string(p.UID), code, terminationMessage(c, code, msgFile, logPath), start, metav1.Now())
}

// messageFile makes the empty file that stands for the container's
// terminationMessagePath (the API server's default when unset) and adds it
// to mounts, so that the path is rewritten in the container's command line
// and environment as a mount path is.
func messageFile(c corev1.Container, dir string, mounts map[string]string) (string, error) {
	path := c.TerminationMessagePath
	if path == "" {
		path = corev1.TerminationMessagePathDefault
	}
	local := filepath.Join(dir, "termination", c.Name)
	if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(local, nil, 0o666); err != nil {
		return "", err
	}
	mounts[filepath.Clean(path)] = local
	return local, nil
}

// terminationMessage is what the kubelet reports as the container's
// message: the first 4096 bytes of its termination-message file; only when
// that is empty and the container failed, under FallbackToLogsOnError, its
// log's tail.
func terminationMessage(c corev1.Container, code int32, msgFile, logPath string) string {
	if msg := head(msgFile, maxMessageFile); msg != "" {
		return msg
	}
	if code != 0 && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		return tail(logPath, maxMessage)
	}
	return ""
}

// bindScript runs in the container's private mount namespace: it binds
// each source onto its target (pairs of arguments up to "--"), then execs
// the container's command. A failed bind exits 125 (the runtime's "could
// not start") after mount's own message.
const bindScript = `while [ "$1" != -- ]; do mount --bind "$1" "$2" || { echo "jobkubelet: cannot bind the claim's $1 onto $2" >&2; exit 125; }; shift 2; done; shift; exec "$@"`

// withBindMounts runs argv in a private mount namespace with binds made,
// as a container sees its claim mounted at the volume's path: the path is
// then a mount point (in /proc/self/mountinfo) for the container's process
// only, and the mounts vanish with it. unshare and sh exec, so the
// container's process keeps the PID this kubelet kills.
func withBindMounts(argv []string, binds []bindMount) []string {
	if len(binds) == 0 {
		return argv
	}
	out := []string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", bindScript, "sh"}
	for _, b := range binds {
		out = append(out, b.source, b.target)
	}
	return append(append(out, "--"), argv...)
}

// mountMap is c's mount paths with the directories they stand for.
func mountMap(c corev1.Container, vols map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		d, ok := vols[m.Name]
		if !ok {
			return nil, fmt.Errorf("mount %s: no volume %q", m.MountPath, m.Name)
		}
		out[filepath.Clean(m.MountPath)] = filepath.Join(d, m.SubPath)
	}
	return out, nil
}

// command is the container's local argv: its command (or the image's
// entrypoint) and arguments with $(VAR) expanded from env.
func (k *Kubelet) command(c corev1.Container, env []string) ([]string, error) {
	vars := map[string]string{}
	for _, kv := range env {
		n, v, _ := strings.Cut(kv, "=")
		vars[n] = v
	}
	var argv []string
	if len(c.Command) == 0 {
		bin, ok := k.cfg.Images[imageName(c.Image)]
		if !ok {
			return nil, fmt.Errorf("image %q is not known to the test bed's Job kubelet", c.Image)
		}
		argv = []string{bin}
	} else {
		bin, ok := k.cfg.Programs[c.Command[0]]
		if !ok || !filepath.IsAbs(c.Command[0]) {
			return nil, fmt.Errorf("command %q of image %q is not known to the test bed's Job kubelet", c.Command[0], c.Image)
		}
		argv = []string{bin}
		for _, a := range c.Command[1:] {
			argv = append(argv, Expand(a, vars))
		}
	}
	for _, a := range c.Args {
		argv = append(argv, Expand(a, vars))
	}
	return argv, nil
}

// imageName is an image reference without its tag or digest.
func imageName(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// pathDir is the directory on the container's PATH with the programs the
// configuration maps by bare name.
func (k *Kubelet) pathDir(dir, container string) (string, error) {
	d := filepath.Join(dir, "bin", container)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", err
	}
	for name, bin := range k.cfg.Programs {
		if filepath.IsAbs(name) {
			continue
		}
		if err := os.Symlink(bin, filepath.Join(d, name)); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return d, nil
}

// network maps the --host=/--port= pair a MySQL client is given (a
// Service name and port) to the address that stands for it.
func (k *Kubelet) network(argv []string) []string {
	if k.cfg.Network == nil {
		return argv
	}
	hostAt, portAt, port := -1, -1, 3306 // mysqlsh's default port
	for i, a := range argv {
		switch {
		case strings.HasPrefix(a, "--host="):
			hostAt = i
		case strings.HasPrefix(a, "--port="):
			if n, err := strconv.Atoi(strings.TrimPrefix(a, "--port=")); err == nil {
				portAt, port = i, n
			}
		}
	}
	if hostAt < 0 {
		return argv
	}
	h, p, ok := k.cfg.Network(strings.TrimPrefix(argv[hostAt], "--host="), port)
	if !ok {
		return argv
	}
	out := append([]string(nil), argv...)
	out[hostAt] = "--host=" + h
	if portAt >= 0 {
		out[portAt] = "--port=" + strconv.Itoa(p)
	} else {
		out = append(out[:hostAt+1], append([]string{"--port=" + strconv.Itoa(p)}, out[hostAt+1:]...)...)
	}
	return out
}

// rewritePaths replaces each container mount path in s (as a whole path
// element: a value, an option's value, a word of a shell script) with the
// directory that stands for it; the longest mount path wins.
func rewritePaths(s string, mounts map[string]string) string {
	paths := make([]string, 0, len(mounts))
	for m := range mounts {
		paths = append(paths, m)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	var b strings.Builder
	for i := 0; i < len(s); {
		hit := ""
		if i == 0 || !pathChar(s[i-1]) {
			for _, m := range paths {
				if strings.HasPrefix(s[i:], m) && (i+len(m) == len(s) || s[i+len(m)] == '/' || !pathChar(s[i+len(m)])) {
					hit = m
					break
				}
			}
		}
		if hit == "" {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(mounts[hit])
		i += len(hit)
	}
	return b.String()
}

func pathChar(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// execute runs argv with env in dir, its output in logPath, and returns
// its exit code; the process is killed (by its PID) when ctx ends, and
// with this process (Pdeathsig).
func execute(ctx context.Context, argv, env []string, dir, logPath string) (int32, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, dir, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int32(ws.Signal()), nil // as a container runtime reports a signal
		}
		return int32(exit.ExitCode()), nil
	}
	return 0, err
}

func head(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return ""
	}
	return string(b)
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
