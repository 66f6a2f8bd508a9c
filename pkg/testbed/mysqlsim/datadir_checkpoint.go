package mysqlsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// diskState is the checkpoint: everything of state that mysqld keeps on
// disk. Global variables are not in it (they return to the configuration
// at every start; SET PERSIST values live in mysqld-auto.cnf).
type diskState struct {
	Version  int                             `json:"version"`
	RedoSeq  uint64                          `json:"redoSeq"` // last journal record the checkpoint includes
	Executed string                          `json:"gtidExecuted"`
	Purged   string                          `json:"gtidPurged"`
	Binlog   []diskTxn                       `json:"binlog"`
	DBs      map[string]map[string]wireTable `json:"databases"`
	Repl     *diskChannel                    `json:"replication,omitempty"`
	// Accounts are the mysql schema's accounts and grants (accounts.go);
	// nil in a checkpoint written before they were stored: the configured
	// accounts are created then, as at a first boot.
	Accounts []diskAccount `json:"accounts"`
	// DBSettings are each schema's character set and collation
	// (schemata.go); absent for a schema: the server's defaults.
	DBSettings map[string][2]string `json:"databaseSettings,omitempty"`
}

type diskTxn struct {
	GTID      string   `json:"g"`
	Committed int64    `json:"c"`
	Ops       []wireOp `json:"o"`
}

// diskChannel is the connection metadata repository, the applier metadata
// and the relay log of the default channel. The password is kept, as MySQL
// keeps it in mysql.slave_master_info, so replication resumes after a restart.
type diskChannel struct {
	Host           string  `json:"host"`
	Port           int     `json:"port"`
	User           string  `json:"user"`
	Password       string  `json:"password"`
	AutoPosition   bool    `json:"autoPosition"`
	SSL            bool    `json:"ssl"`
	SSLVerify      bool    `json:"sslVerify"`
	SSLCA          string  `json:"sslCa"`
	SSLCert        string  `json:"sslCert"`
	SSLKey         string  `json:"sslKey"`
	ConnectRetry   int     `json:"connectRetry"`
	RetryCount     int     `json:"retryCount"`
	Delay          int     `json:"delay"`
	GetPublicKey   bool    `json:"getPublicKey"`
	Heartbeat      float64 `json:"heartbeat"`
	IOWanted       bool    `json:"ioWanted"`
	SQLWanted      bool    `json:"sqlWanted"`
	SourceUUID     string  `json:"sourceUuid"`
	SourceServerID uint64  `json:"sourceServerId"`
	// Applier is the applier metadata (relay_log.info); the relay log itself
	// and Retrieved_Gtid_Set are read from the relay log files (relaylog.go).
	Applier applierPos `json:"applier"`
}

func toDiskTxn(t txn) diskTxn {
	w := make([]wireOp, len(t.ops))
	for i, o := range t.ops {
		w[i] = wireOp{o.kind, o.db, o.table, o.cols, o.rows, o.ifExists}
	}
	return diskTxn{GTID: t.gtid.String(), Committed: t.committed.UnixNano(), Ops: w}
}

func fromDiskTxn(d diskTxn) (txn, error) {
	g, err := gtid.ParseGTID(d.GTID)
	if err != nil {
		return txn{}, err
	}
	ops := make([]writeOp, len(d.Ops))
	for i, o := range d.Ops {
		ops[i] = writeOp{kind: o.Kind, db: o.DB, table: o.Table, cols: o.Cols, rows: normalizeJSONRows(o.Rows), ifExists: o.IfExists}
	}
	return txn{gtid: g, ops: ops, committed: time.Unix(0, d.Committed)}, nil
}

func toDiskTxns(ts []txn) []diskTxn {
	out := make([]diskTxn, len(ts))
	for i, t := range ts {
		out[i] = toDiskTxn(t)
	}
	return out
}

func fromDiskTxns(ds []diskTxn) ([]txn, error) {
	out := make([]txn, 0, len(ds))
	for _, d := range ds {
		t, err := fromDiskTxn(d)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// encodeCheckpoint serialises what st holds on disk.
func encodeCheckpoint(st *state, redoSeq uint64) ([]byte, error) {
	d := diskState{
		Version: checkpointVer, RedoSeq: redoSeq, Executed: st.executed.String(), Purged: st.purged.String(),
		Binlog: toDiskTxns(st.binlog), DBs: map[string]map[string]wireTable{},
		Accounts: toDiskAccounts(st.accounts),
	}
	for name, db := range st.dbs {
		if systemSchemas[name] {
			continue
		}
		tables := map[string]wireTable{}
		for tn, t := range db.tables {
			tables[tn] = wireTable{Cols: t.cols, Rows: t.rows}
		}
		d.DBs[name] = tables
		if db.charset != "" {
			if d.DBSettings == nil {
				d.DBSettings = map[string][2]string{}
			}
			d.DBSettings[name] = [2]string{db.charset, db.collation}
		}
	}
	if ch := st.repl; ch != nil {
		d.Repl = &diskChannel{
			Host: ch.host, Port: ch.port, User: ch.user, Password: ch.password, AutoPosition: ch.autoPosition,
			SSL: ch.ssl, SSLVerify: ch.sslVerify, SSLCA: ch.sslCA, SSLCert: ch.sslCert, SSLKey: ch.sslKey,
			ConnectRetry: ch.connectRetry, RetryCount: ch.retryCount, Delay: ch.delay, GetPublicKey: ch.getPublicKey,
			Heartbeat: ch.heartbeat, IOWanted: ch.ioWanted, SQLWanted: ch.sqlWanted, Applier: ch.applier,
			SourceUUID: ch.sourceUUID, SourceServerID: ch.sourceServerID,
		}
	}
	return json.Marshal(d)
}

// decodeCheckpoint rebuilds a state from a checkpoint. Only what a fresh
// mysqld has (the system schemas) is added.
func decodeCheckpoint(b []byte, cfg Config) (*state, uint64, error) {
	var d diskState
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, 0, fmt.Errorf("mysqlsim: %s: %w", checkpointFile, err)
	}
	if d.Version != checkpointVer {
		return nil, 0, fmt.Errorf("mysqlsim: %s: version %d, want %d", checkpointFile, d.Version, checkpointVer)
	}
	st := newState(cfg)
	st.accounts = fromDiskAccounts(d.Accounts)
	if d.Accounts == nil {
		st.accounts = firstBootAccounts(cfg.Users)
	}
	var err error
	if st.executed, err = gtid.Parse(d.Executed); err != nil {
		return nil, 0, err
	}
	if st.purged, err = gtid.Parse(d.Purged); err != nil {
		return nil, 0, err
	}
	if st.binlog, err = fromDiskTxns(d.Binlog); err != nil {
		return nil, 0, err
	}
	for name, tables := range d.DBs {
		db := &database{tables: map[string]*dataTable{}}
		db.charset, db.collation = d.DBSettings[name][0], d.DBSettings[name][1]
		for tn, t := range tables {
			db.tables[tn] = &dataTable{cols: t.Cols, rows: normalizeJSONRows(t.Rows)}
		}
		st.dbs[name] = db
	}
	if c := d.Repl; c != nil {
		ch := newChannel()
		ch.host, ch.port, ch.user, ch.password, ch.autoPosition = c.Host, c.Port, c.User, c.Password, c.AutoPosition
		ch.ssl, ch.sslVerify, ch.sslCA, ch.sslCert, ch.sslKey = c.SSL, c.SSLVerify, c.SSLCA, c.SSLCert, c.SSLKey
		ch.connectRetry, ch.retryCount, ch.delay, ch.getPublicKey = c.ConnectRetry, c.RetryCount, c.Delay, c.GetPublicKey
		ch.heartbeat, ch.ioWanted, ch.sqlWanted = c.Heartbeat, c.IOWanted, c.SQLWanted
		ch.sourceUUID, ch.sourceServerID = c.SourceUUID, c.SourceServerID
		ch.applier = c.Applier
		st.repl = ch
	}
	return st, d.RedoSeq, nil
}

// recovered is the outcome of reading a data directory.
type recovered struct {
	st         *state
	seq        uint64 // last journal record applied
	first      bool   // the directory was empty
	tornTail   bool   // the journal ended in a partial or corrupt record
	redoRecs   int    // journal records replayed
	serverUUID string
	persisted  map[string]persistedVar
}

// recoverState reads the data directory as mysqld's startup does: the
// checkpoint (InnoDB's tablespaces), then every complete journal record
// after it (redo apply); a torn tail is discarded. It writes nothing.
func recoverState(d disk, cfg Config) (recovered, error) {
	var r recovered
	first, err := firstBoot(d)
	if err != nil {
		return r, err
	}
	if r.serverUUID, err = readServerUUID(d); err != nil {
		return r, err
	}
	if r.persisted, err = readPersisted(d); err != nil {
		return r, err
	}
	if first {
		r.st, r.first = newState(cfg), true
		r.st.accounts = firstBootAccounts(cfg.Users) // as an init file (contract 6)
		return r, nil
	}
	b, err := d.readFile(checkpointFile)
	if err != nil {
		return r, err
	}
	if r.st, r.seq, err = decodeCheckpoint(b, cfg); err != nil {
		return r, err
	}
	journal, err := d.readFile(redoFile)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	recs, torn := decodeRedo(journal)
	r.tornTail = torn
	for _, rec := range recs {
		if rec.Seq <= r.seq {
			continue // already in the checkpoint (a crash between checkpoint and journal reset)
		}
		if err := r.st.replay(rec); err != nil {
			return r, fmt.Errorf("mysqlsim: %s record %d: %w", redoFile, rec.Seq, err)
		}
		r.seq = rec.Seq
		r.redoRecs++
	}
	return r, nil
}
