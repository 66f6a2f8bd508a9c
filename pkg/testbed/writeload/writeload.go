// Package writeload writes continuously through one MySQL endpoint and keeps
// an exact record of which writes were acknowledged and under which GTID,
// so that a failover test can report afterwards which acknowledged writes a
// server lacks.
//
// Every write is one transaction committed with an explicit GTID
// (SET gtid_next = 'writer-uuid:N'), so the GTID a write committed as is
// known without reading the binary log. The account therefore needs
// SYSTEM_VARIABLES_ADMIN or REPLICATION_APPLIER (role admin in the simulator).
// This is a test tool: its statements are not part of the product's catalog.
package writeload

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/shipstream/bloodraven/pkg/gtid"
	"github.com/shipstream/bloodraven/pkg/mysql"
)

// Statements the write-load client sends.
const (
	stmtCreateDatabase = "CREATE DATABASE IF NOT EXISTS bloodraven_writeload"
	stmtCreateTable    = "CREATE TABLE IF NOT EXISTS bloodraven_writeload.writes (gno BIGINT PRIMARY KEY, written_at VARCHAR(40))"
	stmtSetGTIDNext    = "SET gtid_next = ?"
	stmtInsert         = "INSERT INTO bloodraven_writeload.writes (gno, written_at) VALUES (?, ?)"
	stmtAutomatic      = "SET gtid_next = 'AUTOMATIC'"
)

// Config configures a Loader.
type Config struct {
	// Endpoint is where writes go (a site's mysqld, or whatever address the
	// product publishes as the active site).
	Endpoint mysql.Options
	// WriterUUID is the source UUID of the GTIDs the loader assigns; a random
	// one when empty. Numbers start after the highest one of that UUID the
	// endpoint has executed (1 for a new UUID).
	WriterUUID string
	// Interval is the pause between writes; zero writes back to back.
	Interval time.Duration
	// MaxWrites stops Run after that many attempts; zero runs until the
	// context ends.
	MaxWrites int
	Logger    *slog.Logger
	// OnAcknowledged, if set, is called with every acknowledged write and
	// when its acknowledgment arrived (write-pause measurements).
	OnAcknowledged func(g gtid.GTID, at time.Time)
}

// Stats counts write attempts by outcome.
type Stats struct {
	Acknowledged int // committed and acknowledged by the server
	Refused      int // the server answered with an error (e.g. 1290 read-only): not committed
	Uncertain    int // the connection broke before an answer: may or may not be committed
	LastError    string
}

// Loader runs the write load and records outcomes.
type Loader struct {
	cfg    Config
	client *mysql.Client
	sid    gtid.SID

	prepared bool // schema created (DDL is refused once the endpoint is fenced)

	mu        sync.Mutex
	next      int64
	acked     gtid.Set
	uncertain gtid.Set
	stats     Stats
}

// New validates cfg and prepares a loader (it does not connect yet).
func New(cfg Config) (*Loader, error) {
	if cfg.WriterUUID == "" {
		cfg.WriterUUID = randomUUID()
	}
	g, err := gtid.ParseGTID(cfg.WriterUUID + ":1")
	if err != nil {
		return nil, fmt.Errorf("writeload: WriterUUID %q: %w", cfg.WriterUUID, err)
	}
	if cfg.Interval < 0 || cfg.MaxWrites < 0 {
		return nil, errors.New("writeload: Interval and MaxWrites must not be negative")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Endpoint.Program == "" {
		cfg.Endpoint.Program = "bloodraven-writeload"
	}
	c, err := mysql.Open(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("writeload: endpoint: %w", err)
	}
	return &Loader{cfg: cfg, client: c, sid: gtid.SID{UUID: g.UUID}, next: 1}, nil
}

func randomUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Close releases the connection pool.
func (l *Loader) Close() error { return l.client.Close() }

// WriterUUID is the UUID of the GTIDs this loader assigns.
func (l *Loader) WriterUUID() string { return l.sid.UUID }

// Run creates the schema (retrying until it succeeds or ctx ends) and then
// writes until ctx ends or MaxWrites attempts were made. Failed writes are
// counted, not returned: a failover test expects some.
func (l *Loader) Run(ctx context.Context) error {
	if err := l.prepare(ctx); err != nil {
		return err
	}
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for attempts := 0; l.cfg.MaxWrites == 0 || attempts < l.cfg.MaxWrites; attempts++ {
		if ctx.Err() != nil {
			return nil
		}
		if conn == nil {
			var err error
			if conn, err = l.client.DB().Conn(ctx); err != nil {
				l.record(gtid.GTID{}, outcomeRefusedNoGTID, err)
				l.pause(ctx)
				continue
			}
		}
		g := l.take()
		outcome, err := l.writeOne(ctx, conn, g)
		l.record(g, outcome, err)
		if outcome == outcomeUncertain {
			conn.Close() // a broken connection is not reused
			conn = nil
		}
		l.pause(ctx)
	}
	return nil
}

func (l *Loader) prepare(ctx context.Context) error {
	if l.prepared {
		return nil
	}
	for {
		_, err := l.client.DB().ExecContext(ctx, stmtCreateDatabase)
		if err == nil {
			_, err = l.client.DB().ExecContext(ctx, stmtCreateTable)
		}
		if err == nil {
			err = l.skipUsedNumbers(ctx)
		}
		if err == nil {
			l.prepared = true
			return nil
		}
		l.cfg.Logger.Warn("write load: schema not ready", "err", err.Error())
		select {
		case <-ctx.Done():
			return fmt.Errorf("writeload: creating the schema: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// skipUsedNumbers starts numbering after the highest GTID of the writer's
// UUID the endpoint already executed (a rerun with the same WriterUUID): a
// transaction whose GTID was executed is skipped by MySQL without error, so
// reusing a number would count a write that never happened as acknowledged.
func (l *Loader) skipUsedNumbers(ctx context.Context) error {
	o, err := l.client.Observe(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if ivs := o.GTIDExecuted.Intervals(l.sid); len(ivs) > 0 && ivs[len(ivs)-1].End >= l.next {
		l.next = ivs[len(ivs)-1].End + 1
	}
	return nil
}

func (l *Loader) pause(ctx context.Context) {
	if l.cfg.Interval <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(l.cfg.Interval):
	}
}

// take reserves the next GTID; numbers are never reused, so an uncertain
// write can never be confused with a later one.
func (l *Loader) take() gtid.GTID {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := gtid.GTID{UUID: l.sid.UUID, GNO: l.next}
	l.next++
	return g
}

type outcome int

const (
	outcomeAcked outcome = iota
	outcomeRefused
	outcomeUncertain
	outcomeRefusedNoGTID
)

// writeOne commits one row with GTID g on conn.
func (l *Loader) writeOne(ctx context.Context, conn *sql.Conn, g gtid.GTID) (outcome, error) {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(wctx, stmtSetGTIDNext, g.String()); err != nil {
		return classify(err), err
	}
	_, err := conn.ExecContext(wctx, stmtInsert, g.GNO, time.Now().UTC().Format(time.RFC3339Nano))
	res := outcomeAcked
	if err != nil {
		res = classify(err)
	}
	if _, rerr := conn.ExecContext(wctx, stmtAutomatic); rerr != nil && res == outcomeAcked {
		// the write is acknowledged; the connection is just not reusable
		return outcomeAcked, nil
	}
	return res, err
}

// classify: an error answer from the server means the write did not commit;
// anything else (connection lost, timeout) leaves the outcome unknown.
func classify(err error) outcome {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return outcomeRefused
	}
	return outcomeUncertain
}

func (l *Loader) record(g gtid.GTID, o outcome, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch o {
	case outcomeAcked:
		l.acked = l.acked.Add(g)
		l.stats.Acknowledged++
		if f := l.cfg.OnAcknowledged; f != nil {
			f(g, time.Now())
		}
	case outcomeRefused, outcomeRefusedNoGTID:
		l.stats.Refused++
	case outcomeUncertain:
		l.uncertain = l.uncertain.Add(g)
		l.stats.Uncertain++
	}
	if err != nil {
		l.stats.LastError = err.Error()
	}
}

// Acknowledged is the set of GTIDs of every acknowledged write.
func (l *Loader) Acknowledged() gtid.Set {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked
}

// Uncertain is the set of GTIDs whose writes lost their connection before
// an answer: they may exist on the server or not, and are not counted as lost.
func (l *Loader) Uncertain() gtid.Set {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.uncertain
}

// Stats returns the counters.
func (l *Loader) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Missing is the loss report: acknowledged GTIDs absent from executed.
func Missing(acknowledged, executed gtid.Set) gtid.Set { return acknowledged.Subtract(executed) }

// MissingOn reports which acknowledged writes the server behind c lacks.
func (l *Loader) MissingOn(ctx context.Context, c *mysql.Client) (gtid.Set, error) {
	o, err := c.Observe(ctx)
	if err != nil {
		return gtid.Set{}, err
	}
	return Missing(l.Acknowledged(), o.GTIDExecuted), nil
}
