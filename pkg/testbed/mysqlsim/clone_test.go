package mysqlsim_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// cloneFrom runs CLONE INSTANCE on recipient from donor and waits for the
// recipient to come back with the donor's gtid_executed.
func cloneFrom(t *testing.T, recipient, donor *mysqlsim.Server) {
	t.Helper()
	h, p := hostPort(t, donor)
	db := adminDB(t, recipient)
	mustExec(t, db, "SET GLOBAL clone_valid_donor_list = ?", h+":"+p)
	conn, err := db.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx(t), fmt.Sprintf("CLONE INSTANCE FROM '%s'@'%s':%s IDENTIFIED BY '%s' REQUIRE NO SSL",
		simtest.ReplUser, h, p, simtest.ReplPass))
	conn.Close()
	if err == nil {
		t.Fatal("CLONE returned success on a connection the restart must have closed")
	}
	want := donor.Snapshot().Executed
	eventually(t, 10*time.Second, "the recipient restarted with the donor's GTIDs", func() (bool, string) {
		s := recipient.Snapshot()
		return s.Running && s.Executed.Equal(want) && s.Purged.Equal(want), s.String()
	})
}

// TestCloneCopiesTheDataDirectoryState: the recipient gets the donor's
// accounts (an account only the donor has logs in on the recipient, one
// only the recipient had is gone) and the donor's replication metadata
// (a donor without a channel leaves the recipient without one), and keeps
// its own server UUID and persisted variables.
func TestCloneCopiesTheDataDirectoryState(t *testing.T) {
	upstream := simtest.Start(t, mysqlsim.Config{})
	donor := simtest.Start(t, mysqlsim.Config{})
	recipient := simtest.Start(t, mysqlsim.Config{SuperReadOnly: true})
	dDB, rDB := adminDB(t, donor), adminDB(t, recipient)
	mustExec(t, dDB, "CREATE USER 'carol'@'%' IDENTIFIED BY 'carol-pw'")
	mustExec(t, dDB, "GRANT SELECT ON *.* TO 'carol'@'%'")
	writeRows(t, dDB, 3)
	mustExec(t, rDB, "SET GLOBAL super_read_only = OFF")
	mustExec(t, rDB, "CREATE USER 'dave'@'%' IDENTIFIED BY 'dave-pw'")
	mustExec(t, rDB, "SET PERSIST max_connections = 321")
	replicate(t, recipient, upstream, "")
	uuid := recipient.ServerUUID()

	cloneFrom(t, recipient, donor)
	rDB = adminDB(t, recipient)
	var n int64
	carol := open(t, recipient.Addr(), "carol", "carol-pw", nil, false)
	if err := carol.QueryRowContext(ctx(t), "SELECT COUNT(*) FROM app.events").Scan(&n); err != nil || n != 3 {
		t.Fatalf("the donor's account on the recipient: %d rows, %v; want it to log in and read the cloned 3", n, err)
	}
	dave := open(t, recipient.Addr(), "dave", "dave-pw", nil, false)
	if err := dave.PingContext(ctx(t)); myErrNo(err) != 1045 {
		t.Errorf("an account only the recipient had: %v, want 1045 (the clone replaced mysql.user)", err)
	}
	if st := replicaStatus(t, rDB); st != nil {
		t.Errorf("the donor had no channel; the recipient kept one replicating from %s", st.get("Source_Host"))
	}
	var gotUUID string
	var maxConn int64
	if err := rDB.QueryRowContext(ctx(t), "SELECT @@GLOBAL.server_uuid, @@GLOBAL.max_connections").Scan(&gotUUID, &maxConn); err != nil {
		t.Fatal(err)
	}
	if gotUUID != uuid || maxConn != 321 {
		t.Errorf("after the clone server_uuid %s, max_connections %d; want the recipient's own %s and its persisted 321", gotUUID, maxConn, uuid)
	}
}

// TestCloneFromADonorWithoutThePlugin: a donor without the clone plugin
// makes the clone fail with 3862 carrying 1524 (the recipient's own
// plugin check is TestCloneNeedsThePlugin's).
func TestCloneFromADonorWithoutThePlugin(t *testing.T) {
	bare := simtest.Start(t, mysqlsim.Config{Options: []string{}})
	recipient := simtest.Start(t, mysqlsim.Config{})
	bh, bp := hostPort(t, bare)
	rDB := adminDB(t, recipient)
	mustExec(t, rDB, "SET GLOBAL clone_valid_donor_list = ?", bh+":"+bp)
	_, err := rDB.ExecContext(ctx(t), fmt.Sprintf("CLONE INSTANCE FROM '%s'@'%s':%s IDENTIFIED BY '%s' REQUIRE NO SSL", simtest.ReplUser, bh, bp, simtest.ReplPass))
	if myErrNo(err) != 3862 || !strings.Contains(err.Error(), "1524") {
		t.Errorf("CLONE from a donor without the plugin: %v, want 3862 carrying 1524", err)
	}
}
