package deployclient

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Environment variables the command receives: the lease's identity, never
// a token (docs/deploy-api.md#the-deploy-lease-client-bloodraven-deploy).
const (
	EnvGroup              = "BLOODRAVEN_DEPLOY_GROUP"
	EnvNamespace          = "BLOODRAVEN_DEPLOY_NAMESPACE"
	EnvOperationID        = "BLOODRAVEN_DEPLOY_OPERATION_ID"
	EnvInstance           = "BLOODRAVEN_DEPLOY_INSTANCE"
	EnvKind               = "BLOODRAVEN_DEPLOY_KIND"
	EnvTopologyGeneration = "BLOODRAVEN_DEPLOY_TOPOLOGY_GENERATION"
	EnvExpiresAt          = "BLOODRAVEN_DEPLOY_EXPIRES_AT"
	EnvTTLSeconds         = "BLOODRAVEN_DEPLOY_TTL_SECONDS"
	EnvOutcomeFile        = "BLOODRAVEN_DEPLOY_OUTCOME_FILE"
)

// CommandOutcome is what became of the command.
type CommandOutcome struct {
	Started    bool      `json:"started"`
	ExitCode   int       `json:"exitCode"`
	Signal     string    `json:"signal,omitempty"`
	StartError string    `json:"startError,omitempty"`
	FinishedAt time.Time `json:"finishedAt"`
}

// OK reports whether the command exited 0 by itself.
func (o CommandOutcome) OK() bool { return o.Started && o.ExitCode == 0 && o.Signal == "" }

// process is the running command, in its own process group so that the
// signals reach whatever it spawned (a shell's children too).
type process struct {
	cmd  *exec.Cmd
	done chan CommandOutcome
}

func startProcess(argv, env []string, stdout, stderr io.Writer, now func() time.Time) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Stdin = env, stdout, stderr, nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan CommandOutcome, 1)}
	go func() {
		err := cmd.Wait()
		p.done <- outcomeOf(cmd, err, now())
	}()
	return p, nil
}

func outcomeOf(cmd *exec.Cmd, err error, at time.Time) CommandOutcome {
	o := CommandOutcome{Started: true, FinishedAt: at}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		o.ExitCode, o.Signal = -1, ws.Signal().String()
	case cmd.ProcessState != nil:
		o.ExitCode = cmd.ProcessState.ExitCode()
	case err != nil:
		o.ExitCode = -1
	}
	return o
}

// signal sends sig to the command's process group (by its PID, which is
// the group id), falling back to the process alone.
func (p *process) signal(sig syscall.Signal) error {
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, sig); err == nil || !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return p.cmd.Process.Signal(sig)
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// commandEnv is base plus the lease's identity.
func commandEnv(base []string, g grantState, outcomeFile string) []string {
	if base == nil {
		base = os.Environ()
	}
	env := append([]string(nil), base...)
	env = append(env,
		EnvGroup+"="+g.migration.Group,
		EnvNamespace+"="+g.migration.Namespace,
		EnvOperationID+"="+g.migration.OperationID,
		EnvInstance+"="+g.migration.Instance,
		EnvKind+"="+g.migration.Kind,
		EnvTopologyGeneration+"="+itoa(g.migration.TopologyGeneration),
		EnvExpiresAt+"="+g.migration.ExpiresAt,
		EnvTTLSeconds+"="+itoa(g.migration.TTLSeconds),
	)
	if outcomeFile != "" {
		env = append(env, EnvOutcomeFile+"="+outcomeFile)
	}
	return env
}
