package mysqlsim_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

func TestControlAPI(t *testing.T) {
	src := simtest.Start(t, mysqlsim.Config{})
	rep := simtest.Start(t, mysqlsim.Config{})
	replicate(t, rep, src, "")
	api := httptest.NewServer(mysqlsim.ControlHandler(rep))
	defer api.Close()
	call := func(method, path string, wantCode int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, api.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != wantCode {
			t.Fatalf("%s %s: status %d, want %d", method, path, resp.StatusCode, wantCode)
		}
		out := map[string]any{}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	repDB := adminDB(t, rep)
	eventually(t, 10*time.Second, "connected", func() (bool, string) { s := rep.Snapshot(); return s.IORunning == "Yes", s.String() })

	call("POST", "/lag?delay=1h", 200)
	writeRows(t, adminDB(t, src), 1)
	eventually(t, 10*time.Second, "received, not applied", func() (bool, string) {
		st := call("GET", "/state", 200)
		return st["retrievedGtidSet"] != "" && st["relayLogLength"].(float64) > 0, st["retrievedGtidSet"].(string)
	})
	call("POST", "/lag?delay=-1s", 400)
	call("POST", "/lag?delay=0s", 200)

	out := call("POST", "/errant?count=2", 200)
	if !strings.HasPrefix(out["gtids"].(string), rep.ServerUUID()+":") {
		t.Fatalf("errant gtids %v", out)
	}
	call("POST", "/errant?count=zero", 400)

	call("POST", "/receiver/stop?errno=2013&message=lost", 200)
	if st := replicaStatus(t, repDB); st.get("Last_IO_Errno") != "2013" {
		t.Fatalf("Last_IO_Errno = %s", st.get("Last_IO_Errno"))
	}
	call("POST", "/applier/stop?errno=1146&message=gone", 200)
	if st := replicaStatus(t, repDB); st.get("Last_SQL_Errno") != "1146" {
		t.Fatalf("Last_SQL_Errno = %s", st.get("Last_SQL_Errno"))
	}
	call("POST", "/applier/stop?errno=x", 400)

	call("POST", "/freeze", 200)
	if !rep.Snapshot().Running {
		t.Fatal("freeze must not stop the server")
	}
	call("POST", "/thaw", 200)
	call("POST", "/partition", 400)
	call("POST", "/partition?client=x", 200)
	call("POST", "/heal", 200)

	call("POST", "/crash", 200)
	if st := call("GET", "/state", 200); st["running"] != false {
		t.Fatalf("state after crash: %v", st)
	}
	if err := repDB.PingContext(ctx(t)); err == nil {
		t.Fatal("crashed server answered")
	}
	call("POST", "/restart", 200)
	if err := repDB.PingContext(ctx(t)); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	call("POST", "/purge-binary-logs", 200)
	if s := rep.Snapshot(); !s.Purged.Equal(s.Executed) {
		t.Fatalf("after purge: %s", s)
	}
	call("GET", "/crash", 405)
}
