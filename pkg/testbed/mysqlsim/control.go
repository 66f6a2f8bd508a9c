package mysqlsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ControlHandler serves the fault-injection API of one server over HTTP, for
// processes started by end-to-end tests and the playground. Every call is a
// POST except the GETs:
//
//	GET  /state                           server state as JSON
//	GET  /auth-failures                   FailedAuthentications, {"user": count}
//	POST /crash, /restart                 crash (connections drop, state kept) and start again
//	POST /freeze, /thaw                   stop answering anything / resume
//	POST /partition?client=NAME[&client=] cut off clients by program_name ("mysqlsim:<name>" for peers)
//	POST /heal                            lift all partitions
//	POST /rollback-time?duration=D        a killed open write transaction rolls back for D (0: at once)
//	POST /receiver/stop?errno=N&message=M stop the replication receiver with an error
//	POST /applier/stop?errno=N&message=M  stop the replication applier with an error
//	POST /lag?delay=DURATION              apply each received transaction DURATION after its commit
//	POST /errant?count=N                  commit N errant transactions, returns {"gtids": ...}
//	POST /purge-binary-logs               purge the binary log (gtid_purged = gtid_executed)
//	POST /relay-log/drop                  lose the relay log's unapplied tail, returns {"gtids": lost}
func ControlHandler(s *Server) http.Handler {
	mux := http.NewServeMux()
	post := func(path string, f func(r *http.Request) (any, error)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			out, err := f(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if out == nil {
				out = map[string]string{"result": "ok"}
			}
			writeJSON(w, out)
		})
	}
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, s.Snapshot().jsonView()) })
	mux.HandleFunc("GET /auth-failures", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, s.FailedAuthentications()) })
	post("/crash", func(*http.Request) (any, error) { s.Crash(); return nil, nil })
	post("/restart", func(*http.Request) (any, error) { return nil, s.Restart() })
	post("/freeze", func(*http.Request) (any, error) { s.Freeze(); return nil, nil })
	post("/thaw", func(*http.Request) (any, error) { s.Thaw(); return nil, nil })
	post("/partition", func(r *http.Request) (any, error) {
		clients := r.URL.Query()["client"]
		if len(clients) == 0 {
			return nil, fmt.Errorf("client: at least one program_name is required")
		}
		s.Partition(clients...)
		return nil, nil
	})
	post("/heal", func(*http.Request) (any, error) { s.Heal(); return nil, nil })
	post("/rollback-time", func(r *http.Request) (any, error) { return nil, setRollbackTime(s, r) }) // rollback.go
	post("/receiver/stop", func(r *http.Request) (any, error) {
		errno, msg, err := errnoMessage(r)
		if err != nil {
			return nil, err
		}
		return nil, s.StopReceiver(errno, msg)
	})
	post("/applier/stop", func(r *http.Request) (any, error) {
		errno, msg, err := errnoMessage(r)
		if err != nil {
			return nil, err
		}
		return nil, s.StopApplier(errno, msg)
	})
	post("/lag", func(r *http.Request) (any, error) {
		d, err := time.ParseDuration(r.URL.Query().Get("delay"))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("delay: want a non-negative Go duration such as 2s, got %q", r.URL.Query().Get("delay"))
		}
		return nil, s.InjectApplyLag(d)
	})
	post("/errant", func(r *http.Request) (any, error) {
		n, err := strconv.Atoi(r.URL.Query().Get("count"))
		if err != nil || n < 1 || n > 10000 {
			return nil, fmt.Errorf("count: want 1 to 10000, got %q", r.URL.Query().Get("count"))
		}
		return map[string]string{"gtids": s.InjectErrantTransactions(n).OneLine()}, nil
	})
	post("/purge-binary-logs", func(*http.Request) (any, error) { s.PurgeBinaryLogs(); return nil, nil })
	post("/relay-log/drop", func(*http.Request) (any, error) { // relaylog.go
		lost, err := s.DropRelayLog()
		return map[string]string{"gtids": lost.OneLine()}, err
	})
	return mux
}

func errnoMessage(r *http.Request) (int, string, error) {
	q := r.URL.Query()
	errno, err := strconv.Atoi(q.Get("errno"))
	if err != nil || errno <= 0 {
		return 0, "", fmt.Errorf("errno: want a positive MySQL error number, got %q", q.Get("errno"))
	}
	msg := q.Get("message")
	if msg == "" {
		return 0, "", fmt.Errorf("message: required")
	}
	return errno, msg, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

type snapshotJSON struct {
	Running          bool   `json:"running"`
	ReadOnly         bool   `json:"readOnly"`
	SuperReadOnly    bool   `json:"superReadOnly"`
	GTIDExecuted     string `json:"gtidExecuted"`
	GTIDPurged       string `json:"gtidPurged"`
	RetrievedGTIDSet string `json:"retrievedGtidSet"`
	RelayLogLength   int    `json:"relayLogLength"`
	IORunning        string `json:"ioRunning"`
	SQLRunning       bool   `json:"sqlRunning"`
	Sessions         int    `json:"sessions"`
}

func (s Snapshot) jsonView() snapshotJSON {
	return snapshotJSON{s.Running, s.ReadOnly, s.SuperReadOnly, s.Executed.OneLine(), s.Purged.OneLine(),
		s.Retrieved.OneLine(), s.RelayLogLength, s.IORunning, s.SQLRunning, s.Sessions}
}
