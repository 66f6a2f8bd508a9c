package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ChannelEvidence is what a replica's performance_schema says of its
// channel (MySQL 9.7, "Performance Schema Replication Tables"): evidence
// of how far behind it is that lives on the replica, not in the operator.
// Times are the replica's, as it shows them; Now is its clock in the same
// round, so callers work with differences on that one clock. Zero times
// are MySQL's '0000-00-00 00:00:00.000000' (none since the server or the
// channel started).
type ChannelEvidence struct {
	Now time.Time
	// LastHeartbeat: LAST_HEARTBEAT_TIMESTAMP.
	LastHeartbeat time.Time
	// LastQueued: LAST_QUEUED_TRANSACTION, its original commit timestamp
	// and when queueing it ended.
	LastQueued       string
	LastQueuedCommit time.Time
	LastQueuedEnd    time.Time
	// LastApplied: the latest LAST_APPLIED_TRANSACTION among the workers
	// (by original commit timestamp) and that timestamp.
	LastApplied       string
	LastAppliedCommit time.Time
}

// ErrNoChannel: the server has no replication channel.
var ErrNoChannel = errors.New("no replication channel")

// ReplicationEvidence reads the channel's evidence: the clock, then the
// receiver's and the applier's rows.
func (c *Client) ReplicationEvidence(ctx context.Context) (ChannelEvidence, error) {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	var e ChannelEvidence
	var now string
	if err := c.db.QueryRowContext(ctx, StmtNow.SQL).Scan(&now); err != nil {
		return e, c.wrap(StmtNow, err)
	}
	var err error
	if e.Now, err = parseTimestamp(now); err != nil {
		return e, c.wrap(StmtNow, err)
	}
	var hb, qc, qe sql.NullString
	var queued sql.NullString
	err = c.db.QueryRowContext(ctx, StmtConnectionStatus.SQL).Scan(&hb, &queued, &qc, &qe)
	if errors.Is(err, sql.ErrNoRows) {
		return e, ErrNoChannel
	}
	if err != nil {
		return e, c.wrap(StmtConnectionStatus, err)
	}
	e.LastQueued = queued.String
	for _, f := range []struct {
		dst *time.Time
		v   sql.NullString
	}{{&e.LastHeartbeat, hb}, {&e.LastQueuedCommit, qc}, {&e.LastQueuedEnd, qe}} {
		if *f.dst, err = parseTimestamp(f.v.String); err != nil {
			return e, c.wrap(StmtConnectionStatus, err)
		}
	}
	return e, c.lastApplied(ctx, &e)
}

func (c *Client) lastApplied(ctx context.Context, e *ChannelEvidence) error {
	rows, err := c.db.QueryContext(ctx, StmtApplierByWorker.SQL)
	if err != nil {
		return c.wrap(StmtApplierByWorker, err)
	}
	defer rows.Close()
	for rows.Next() {
		var trx, commit sql.NullString
		if err := rows.Scan(&trx, &commit); err != nil {
			return c.wrap(StmtApplierByWorker, err)
		}
		at, err := parseTimestamp(commit.String)
		if err != nil {
			return c.wrap(StmtApplierByWorker, err)
		}
		if trx.String != "" && !at.Before(e.LastAppliedCommit) {
			e.LastApplied, e.LastAppliedCommit = trx.String, at
		}
	}
	return c.wrap(StmtApplierByWorker, rows.Err())
}

// parseTimestamp reads a DATETIME/TIMESTAMP as MySQL prints it, with or
// without fractional seconds, or as database/sql renders a time.Time the
// driver parsed (parseTime, RFC 3339); MySQL's zero value and "" are the
// zero time.
func parseTimestamp(v string) (time.Time, error) {
	if v == "" || strings.HasPrefix(v, "0000-00-00") || strings.HasPrefix(v, "0001-01-01") {
		return time.Time{}, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999", "2006-01-02 15:04:05", time.RFC3339Nano} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q: not a MySQL DATETIME", v)
}

// StartReplicaSQLThread starts the applier only.
func (c *Client) StartReplicaSQLThread(ctx context.Context) error {
	return c.exec(ctx, StmtStartReplicaSQLThread, StmtStartReplicaSQLThread.SQL)
}
