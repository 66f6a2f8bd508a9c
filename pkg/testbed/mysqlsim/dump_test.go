package mysqlsim_test

import (
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/binlogfile"
	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/simtest"
)

// rawReplica speaks the replication protocol packet by packet, so tests can
// send what a MySQL 9.7 receiver sends (tagged GTID sets, the
// USE_HEARTBEAT_EVENT_V2 flag, a chosen replica UUID) and see each packet.
type rawReplica struct {
	t *testing.T
	c *client.Conn
}

func dialReplica(t *testing.T, addr, user, pass string, stmts ...string) *rawReplica {
	t.Helper()
	c, err := client.Connect(addr, user, pass, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, q := range stmts {
		if _, err := c.Execute(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return &rawReplica{t: t, c: c}
}

func (r *rawReplica) register(serverID uint32, host string, port uint16) error {
	b := make([]byte, 4, 64)
	b = append(b, gomysql.COM_REGISTER_SLAVE)
	b = binary.LittleEndian.AppendUint32(b, serverID)
	b = append(b, byte(len(host)))
	b = append(b, host...)
	b = append(b, 0, 0) // report_user, report_password
	b = binary.LittleEndian.AppendUint16(b, port)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 0)
	r.c.ResetSequence()
	if err := r.c.WritePacket(b); err != nil {
		return err
	}
	_, err := r.c.ReadOKPacket()
	return err
}

func (r *rawReplica) dump(flags uint16, serverID uint32, have gtid.Set) {
	r.t.Helper()
	set := binlogfile.EncodeGTIDSet(have)
	b := make([]byte, 4, 64+len(set))
	b = append(b, gomysql.COM_BINLOG_DUMP_GTID)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint32(b, serverID)
	b = binary.LittleEndian.AppendUint32(b, 0) // no file name
	b = binary.LittleEndian.AppendUint64(b, 4)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(set)))
	b = append(b, set...)
	r.c.ResetSequence()
	if err := r.c.WritePacket(b); err != nil {
		r.t.Fatal(err)
	}
}

// next reads one event (the OK byte removed), or the ERR packet as an error.
func (r *rawReplica) next(timeout time.Duration) ([]byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(timeout))
	data, err := r.c.ReadPacket()
	if err != nil {
		return nil, err
	}
	if data[0] == gomysql.ERR_HEADER {
		return nil, r.c.HandleErrorPacket(data)
	}
	if data[0] != gomysql.OK_HEADER {
		return nil, fmt.Errorf("packet starts with %#x", data[0])
	}
	return data[1:], nil
}

// until reads events until one of type typ arrives.
func (r *rawReplica) until(typ byte) []byte {
	r.t.Helper()
	for {
		ev, err := r.next(20 * time.Second)
		if err != nil {
			r.t.Fatalf("waiting for event type %d: %v", typ, err)
		}
		if ev[4] == typ {
			return ev
		}
	}
}

func checksumOK(ev []byte) bool {
	n := len(ev)
	return crc32.ChecksumIEEE(ev[:n-4]) == binary.LittleEndian.Uint32(ev[n-4:])
}

func want1236(t *testing.T, err error, text string) {
	t.Helper()
	var me *gomysql.MyError
	if !errors.As(err, &me) || me.Code != 1236 || !strings.Contains(me.Message, text) {
		t.Fatalf("got %v, want 1236 containing %q", err, text)
	}
}

func processlistRow(t *testing.T, db *sql.DB, user string) (id int64, command, state string) {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "SHOW PROCESSLIST")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var u, cmd string
		var host, dbName, st, info sql.NullString
		var tm int64
		var pid int64
		if err := rows.Scan(&pid, &u, &host, &dbName, &cmd, &tm, &st, &info); err != nil {
			t.Fatal(err)
		}
		if u == user {
			return pid, cmd, st.String
		}
	}
	return 0, "", ""
}

// TestDumpAsAMySQLReceiverAsks: what a MySQL 9.7 receiver sends before the
// dump is answered (checksum, heartbeat period, replica UUID, the source's
// clock and identity); COM_REGISTER_SLAVE shows in SHOW REPLICAS; the dump
// starts with an artificial rotate event checksummed as announced, sends
// v2 heartbeats naming the current file and position, shows as "Binlog
// Dump GTID" in the processlist, and ends with KILL.
func TestDumpAsAMySQLReceiverAsks(t *testing.T) {
	const serverID = 77
	srv := simtest.Start(t, mysqlsim.Config{ServerID: serverID})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	commit(t, db, "CREATE DATABASE d")
	const uuid = "6b0e1a2c-0000-4000-8000-000000000777"
	r := dialReplica(t, srv.Addr(), simtest.ReplUser, simtest.ReplPass,
		"SET @source_binlog_checksum = @@GLOBAL.binlog_checksum, @master_binlog_checksum = @@GLOBAL.binlog_checksum",
		"SET @source_heartbeat_period = 100000000, @master_heartbeat_period = 100000000",
		"SET @replica_uuid = '"+uuid+"', @slave_uuid = '"+uuid+"'")
	res, err := r.c.Execute("SELECT @source_binlog_checksum, UNIX_TIMESTAMP(), @@GLOBAL.SERVER_ID, @@GLOBAL.SERVER_UUID, @@GLOBAL.GTID_MODE, @nothing")
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := res.GetString(0, 0)
	clock, _ := res.GetInt(0, 1)
	id, _ := res.GetUint(0, 2)
	sid, _ := res.GetString(0, 3)
	mode, _ := res.GetString(0, 4)
	null, _ := res.IsNull(0, 5)
	if sum != "CRC32" || clock < time.Now().Add(-time.Minute).Unix() || id != serverID ||
		sid != srv.ServerUUID() || mode != "ON" || !null {
		t.Fatalf("receiver's questions answered %q %d %d %q %q null=%v", sum, clock, id, sid, mode, null)
	}
	if err := r.register(4242, "replica-a", 3307); err != nil {
		t.Fatal(err)
	}
	rows := showRows(t, db, "SHOW REPLICAS")
	want := fmt.Sprintf("4242 replica-a 3307 %d %s", serverID, uuid)
	if len(rows) != 1 || strings.Join(rows[0], " ") != want {
		t.Fatalf("SHOW REPLICAS = %v, want [%s]", rows, want)
	}
	r.dump(0x02, 4242, executedSet(t, db))
	rot, err := r.next(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rot[4] != 4 || binary.LittleEndian.Uint32(rot[0:]) != 0 || binary.LittleEndian.Uint32(rot[13:]) != 0 ||
		binary.LittleEndian.Uint16(rot[17:])&0x20 == 0 || !checksumOK(rot) || !strings.HasSuffix(string(rot[27:len(rot)-4]), "binlog.000001") {
		t.Fatalf("first event %x: want an artificial rotate to binlog.000001 with a CRC32", rot)
	}
	fd := r.until(15)
	if binary.LittleEndian.Uint16(fd[17:])&1 != 0 || binary.LittleEndian.Uint32(fd[13:]) != 0 || !checksumOK(fd) {
		t.Errorf("format description sent with flags %#x log_pos %d (the replica has the file's first transaction)",
			binary.LittleEndian.Uint16(fd[17:]), binary.LittleEndian.Uint32(fd[13:]))
	}
	hb := r.until(41)
	var file string
	var pos uint64
	var doDB, ignoreDB, executed string
	if err := db.QueryRowContext(ctx(t), "SHOW BINARY LOG STATUS").Scan(&file, &pos, &doDB, &ignoreDB, &executed); err != nil {
		t.Fatal(err)
	}
	body := hb[19 : len(hb)-4]
	wantBody := append([]byte{1, byte(len(file))}, file...)
	wantBody = append(wantBody, 2, 3, 0xfc, byte(pos), byte(pos>>8), 0) // position: length 3, length-encoded
	if pos >= 1<<16 || !checksumOK(hb) || string(body) != string(wantBody) {
		t.Errorf("heartbeat v2 body %x, want %x (%s at %d)", body, wantBody, file, pos)
	}
	var pid int64
	var cmd, state string
	waitFor(t, "the dump to wait for updates", func() bool {
		pid, cmd, state = processlistRow(t, db, simtest.ReplUser)
		return cmd == "Binlog Dump GTID" && state == "Source has sent all binlog to replica; waiting for more updates"
	})
	if _, err := db.ExecContext(ctx(t), fmt.Sprintf("KILL %d", pid)); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := r.next(10 * time.Second); err != nil {
			break // the connection is gone
		}
	}
	waitFor(t, "SHOW REPLICAS to forget the replica", func() bool { return len(showRows(t, db, "SHOW REPLICAS")) == 0 })
}

// TestDumpRefusals: without REPLICATION SLAVE both commands give 1227; a
// receiver that announced no checksum support gets 1236 (the source logs
// CRC32); a second dump with the same replica UUID ends the older one with
// MySQL's 1236, and the newer one streams on.
func TestDumpRefusals(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	commit(t, db, "CREATE DATABASE d")

	app := dialReplica(t, srv.Addr(), simtest.AppUser, simtest.AppPass)
	var me *gomysql.MyError
	if err := app.register(5, "", 0); !errors.As(err, &me) || me.Code != 1227 {
		t.Errorf("COM_REGISTER_SLAVE by the app account: %v, want 1227", err)
	}
	app.dump(0, 5, gtid.Set{})
	if _, err := app.next(10 * time.Second); !errors.As(err, &me) || me.Code != 1227 || !strings.Contains(me.Message, "REPLICATION SLAVE") {
		t.Errorf("COM_BINLOG_DUMP_GTID by the app account: %v, want 1227", err)
	}

	bare := dialReplica(t, srv.Addr(), simtest.ReplUser, simtest.ReplPass)
	bare.dump(0, 6, gtid.Set{})
	var err error
	for err == nil {
		_, err = bare.next(10 * time.Second)
	}
	want1236(t, err, "Replica can not handle replication events with the checksum that source is configured to log")

	const uuid = "6b0e1a2c-0000-4000-8000-000000000888"
	setup := []string{"SET @source_binlog_checksum = 'CRC32'", "SET @replica_uuid = '" + uuid + "'"}
	older := dialReplica(t, srv.Addr(), simtest.ReplUser, simtest.ReplPass, setup...)
	older.dump(0, 7, executedSet(t, db))
	older.until(35) // Previous_gtids: the dump runs
	newer := dialReplica(t, srv.Addr(), simtest.ReplUser, simtest.ReplPass, setup...)
	newer.dump(0, 7, executedSet(t, db))
	for err = nil; err == nil; {
		_, err = older.next(10 * time.Second)
	}
	want1236(t, err, "A replica with the same server_uuid/server_id as this replica has connected to the source")
	rec := commit(t, db, "CREATE DATABASE e")
	ev := newer.until(33)
	if g, err := binlogfile.EventGTID(ev); err != nil || g != rec.gtid {
		t.Fatalf("the newer dump sent %v (%v), want %s", g, err, rec.gtid)
	}

	// Without replica UUIDs, the same server id makes the older a zombie.
	first := dialReplica(t, srv.Addr(), simtest.ReplUser, simtest.ReplPass, setup[0])
	first.dump(0, 11, executedSet(t, db))
	first.until(35)
	second := dialReplica(t, srv.Addr(), simtest.ReplUser, simtest.ReplPass, setup[0])
	second.dump(0, 11, executedSet(t, db))
	second.until(35)
	for err = nil; err == nil; {
		_, err = first.next(10 * time.Second)
	}
	want1236(t, err, "A replica with the same server_uuid/server_id as this replica has connected to the source")
}

// TestDumpTaggedGTIDs: a receiver's set in MySQL 8.3+'s tagged encoding is
// understood: a tagged transaction it has is skipped (a heartbeat marks
// how far), the ones it lacks arrive as Gtid_tagged_log_event.
func TestDumpTaggedGTIDs(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	u := srv.ServerUUID()
	commit(t, db, "SET gtid_next = '"+u+":blue:1'", "CREATE DATABASE d", "SET gtid_next = 'AUTOMATIC'")
	second := commit(t, db, "SET gtid_next = '"+u+":blue:2'", "CREATE DATABASE e", "SET gtid_next = 'AUTOMATIC'")
	third := commit(t, db, "CREATE DATABASE f")
	r := dialReplica(t, srv.Addr(), simtest.ReplUser, simtest.ReplPass, "SET @source_binlog_checksum = 'CRC32'")
	r.dump(0, 9, gtid.MustParse(u+":blue:1"))
	var got []string
	skipped := false
	for len(got) < 2 {
		ev, err := r.next(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		switch ev[4] {
		case 27:
			skipped = skipped || len(got) == 0
		case 33, 42:
			g, err := binlogfile.EventGTID(ev)
			if err != nil {
				t.Fatal(err)
			}
			if (ev[4] == 42) != (g.Tag != "") {
				t.Errorf("%s sent as event type %d", g, ev[4])
			}
			got = append(got, g.String())
		}
	}
	if got[0] != second.gtid.String() || got[1] != third.gtid.String() || !skipped {
		t.Fatalf("streamed %v (heartbeat for the skipped one: %v), want [%s %s]", got, skipped, second.gtid, third.gtid)
	}
}

// TestDumpContinuesAcrossPurge: a caught-up syncer keeps streaming when the
// files it read are purged (the purge fault rotates and purges every older
// file), since it lost nothing by it.
func TestDumpContinuesAcrossPurge(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	recs := []commitRecord{commit(t, db, "CREATE DATABASE d")}
	_, c := startSyncer(t, srv.Addr(), gtid.Set{}, syncerOpts{})
	waitFor(t, "the first transaction", func() bool { return len(c.gtids(t)) == 1 })
	srv.PurgeBinaryLogs()
	recs = append(recs, commit(t, db, "CREATE DATABASE e"))
	waitFor(t, "the transaction after the purge", func() bool {
		if _, _, err := c.snapshot(); err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		return len(c.gtids(t)) == 2
	})
	if got := c.gtids(t); !sameStrings(got, recordGTIDs(recs)) {
		t.Fatalf("got %v, want %v", got, recordGTIDs(recs))
	}
}

// TestRelaxedDurabilitySendsWhatACrashLoses: a transaction is sent once it
// is committed, before relaxed durability (sync_binlog=0) has written it
// to the file, so a crash can take from the source a transaction a replica
// already has; the source then refuses that replica as MySQL does ("more
// GTIDs than the source"). The once-a-second flusher may win the race to
// the disk; the scenario is repeated until the crash comes first.
func TestRelaxedDurabilitySendsWhatACrashLoses(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	commit(t, db, "CREATE DATABASE d")
	for attempt := 0; ; attempt++ {
		if attempt == 5 {
			t.Fatal("the flusher wrote the transaction before every crash")
		}
		mustExec(t, db, "SET GLOBAL sync_binlog = 0")
		mustExec(t, db, "SET GLOBAL innodb_flush_log_at_trx_commit = 2")
		from := executedSet(t, db)
		_, c := startSyncer(t, srv.Addr(), from, syncerOpts{serverID: uint32(9100 + attempt)})
		time.Sleep(50 * time.Millisecond)
		rec := commit(t, db, fmt.Sprintf("CREATE DATABASE r%d", attempt))
		waitFor(t, "the syncer to get the transaction", func() bool { return len(c.gtids(t)) == 1 })
		srv.Crash()
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		db = open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
		if executedSet(t, db).Contains(rec.gtid) {
			continue // flushed before the crash: no loss to show
		}
		if got := c.gtids(t); got[0] != rec.gtid.String() {
			t.Fatalf("the syncer got %v, want %s", got, rec.gtid)
		}
		_, c2 := startSyncer(t, srv.Addr(), from.Add(rec.gtid), syncerOpts{serverID: 9200})
		select {
		case <-c2.done:
		case <-time.After(30 * time.Second):
			t.Fatal("the source streams to a replica holding a GTID the source lost")
		}
		_, _, err := c2.snapshot()
		want1236(t, err, "Replica has more GTIDs than the source has")
		return
	}
}

// TestDumpFrozenSendsNothing: while the source is frozen, or the
// replica's program is partitioned off, a running dump sends nothing, not
// even heartbeats; afterwards it goes on where it was.
func TestDumpFrozenSendsNothing(t *testing.T) {
	srv := simtest.Start(t, mysqlsim.Config{})
	db := open(t, srv.Addr(), simtest.AdminUser, simtest.AdminPass, nil, false)
	commit(t, db, "CREATE DATABASE d")
	_, c := startSyncer(t, srv.Addr(), gtid.Set{}, syncerOpts{heartbeat: 50 * time.Millisecond})
	waitFor(t, "heartbeats", func() bool { _, hb, _ := c.snapshot(); return len(hb) >= 2 })
	for _, fault := range []struct {
		name      string
		cut, heal func()
	}{
		{"freeze", srv.Freeze, srv.Thaw},
		// go-mysql's syncer sends no program_name attribute: the partition
		// names the empty one (the test's other clients are idle meanwhile).
		{"partition", func() { srv.Partition("") }, srv.Heal},
	} {
		fault.cut()
		time.Sleep(100 * time.Millisecond) // a heartbeat already being written may still arrive
		_, before, _ := c.snapshot()
		time.Sleep(500 * time.Millisecond) // ten heartbeat periods
		_, during, _ := c.snapshot()
		fault.heal()
		if len(during) != len(before) {
			t.Errorf("%s: %d heartbeats arrived while cut off", fault.name, len(during)-len(before))
		}
		waitFor(t, fault.name+": heartbeats again", func() bool { _, hb, _ := c.snapshot(); return len(hb) > len(during) })
	}
	rec := commit(t, db, "CREATE DATABASE e")
	waitFor(t, "the transaction after the faults", func() bool { return len(c.gtids(t)) == 2 })
	if got := c.gtids(t); got[1] != rec.gtid.String() {
		t.Fatalf("got %v after the faults, want %s last", got, rec.gtid)
	}
}
