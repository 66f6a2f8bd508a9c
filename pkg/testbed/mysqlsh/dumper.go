package mysqlsh

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Hooks are test seams: Locked runs while the dump holds the global read
// lock (after it read gtid_executed and the binary log position), Unlocked
// right after it released it, before any row is read.
type Hooks struct {
	Locked, Unlocked func()
}

// console prints as mysqlsh's console does: information on stdout,
// notes, warnings and errors on stderr with their prefixes.
type console struct{ stdout, stderr io.Writer }

func (c console) info(format string, a ...any) { fmt.Fprintf(c.stdout, format+"\n", a...) }
func (c console) note(format string, a ...any) { fmt.Fprintf(c.stderr, "NOTE: "+format+"\n", a...) }
func (c console) warning(format string, a ...any) {
	fmt.Fprintf(c.stderr, "WARNING: "+format+"\n", a...)
}
func (c console) error(format string, a ...any) { fmt.Fprintf(c.stderr, "ERROR: "+format+"\n", a...) }

// Errors of the dump in MySQL Shell's words (docs/mysqlsh-stand-in.md).
var (
	errGlobalReadLockFailed = errors.New("Unable to acquire global read lock")
	errNoSchemasSelected    = errors.New("Filters for schemas result in an empty set.")
)

// schemaInfo and tableInfo are what the dump learned about the server
// while it held the lock.
type schemaInfo struct {
	name, charset, collation string
	tables                   []string
}

// instance is what @.json records about the server at the lock.
type instance struct {
	version, hostname, user string
	gtidExecuted            string
	binlogFile              string
	binlogPosition          uint64
	hasBinlog               bool
	schemas                 []schemaInfo
}

// dumper runs one dumpInstance.
type dumper struct {
	inv     invocation
	con     console
	hooks   Hooks
	db      *sql.DB
	main    *sql.Conn
	workers []*sql.Conn
	begin   time.Time
}

// excludedSchemas are never dumped, as MySQL Shell never dumps them
// (docs/mysqlsh-stand-in.md).
var excludedSchemas = map[string]bool{"information_schema": true, "mysql": true, "ndbinfo": true,
	"performance_schema": true, "sys": true}

// lock takes what dumpInstance takes for a consistent dump, in its order:
// FLUSH NO_WRITE_TO_BINLOG TABLES, FLUSH TABLES WITH READ LOCK, a
// consistent snapshot in the main session and in every worker session,
// the server's metadata, LOCK INSTANCE FOR BACKUP, UNLOCK TABLES. Without
// consistent, only the worker sessions are opened.
func (d *dumper) lock(ctx context.Context) (instance, error) {
	consistent := d.inv.opts.consistent
	if consistent {
		d.con.info("Acquiring global read lock")
		if err := d.globalReadLock(ctx); err != nil {
			return instance{}, err
		}
		d.con.info("Global read lock acquired")
		if err := startSnapshot(ctx, d.main); err != nil {
			return instance{}, err
		}
	}
	for i := 0; i < d.inv.opts.threads; i++ {
		w, err := d.db.Conn(ctx)
		if err != nil {
			return instance{}, err
		}
		d.workers = append(d.workers, w)
		if consistent {
			if err := startSnapshot(ctx, w); err != nil {
				return instance{}, err
			}
		}
	}
	d.con.info("Initializing - done")
	inst, err := d.readInstance(ctx)
	if err != nil {
		return instance{}, err
	}
	if !consistent {
		d.con.warning("The dumped value of gtid_executed is not guaranteed to be consistent")
		return inst, nil
	}
	d.con.info("All transactions have been started")
	if d.hooks.Locked != nil {
		d.hooks.Locked()
	}
	d.lockInstance(ctx, inst.user)
	if _, err := d.main.ExecContext(ctx, "UNLOCK TABLES;"); err != nil {
		return instance{}, err
	}
	d.con.info("Global read lock has been released")
	if d.hooks.Unlocked != nil {
		d.hooks.Unlocked()
	}
	return inst, nil
}

// globalReadLock is FLUSH TABLES WITH READ LOCK after a FLUSH TABLES that
// lowers the chance of stalling every client behind a long update. An
// account that may not FLUSH makes MySQL Shell fall back to LOCK TABLES,
// which the simulator does not model: that path ends in the error MySQL
// Shell gives when both fail.
func (d *dumper) globalReadLock(ctx context.Context) error {
	_, err := d.main.ExecContext(ctx, "FLUSH NO_WRITE_TO_BINLOG TABLES;")
	if err == nil {
		_, err = d.main.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK;")
	}
	if err == nil {
		return nil
	}
	switch errNumber(err) {
	case 1227, 1044, 1045: // access denied: fall back to LOCK TABLES
		d.con.warning("The current user lacks privileges to acquire a global read lock using 'FLUSH TABLES WITH READ LOCK'. Falling back to LOCK TABLES...")
		_, lerr := d.main.ExecContext(ctx, "LOCK TABLES `mysql`.`user` READ")
		if lerr == nil {
			lerr = errors.New("the test-bed mysqlsh stand-in does not dump under LOCK TABLES")
		}
		d.con.error("Unable to acquire global read lock neither table read locks.")
		return fmt.Errorf("Unable to lock tables: %s.", mysqlError(lerr))
	}
	d.con.error("Failed to acquire global read lock: %s", mysqlError(err))
	return errGlobalReadLockFailed
}

func startSnapshot(ctx context.Context, c *sql.Conn) error {
	for _, q := range []string{"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;", "START TRANSACTION WITH CONSISTENT SNAPSHOT;"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// lockInstance is LOCK INSTANCE FOR BACKUP, held to the end of the dump so
// that DDL cannot change what is being dumped. Without BACKUP_ADMIN MySQL
// Shell goes on with a note, as here.
func (d *dumper) lockInstance(ctx context.Context, account string) {
	d.con.info("Locking instance for backup")
	if _, err := d.main.ExecContext(ctx, "LOCK INSTANCE FOR BACKUP"); err != nil {
		d.con.note("Backup lock is not available to the account %s and DDL changes will not be blocked. The dump may fail with an error if schema changes are made while dumping.", account)
	}
}

// readInstance reads, in the main session and under the lock, what @.json
// records: the server's version and host name, gtid_executed, the binary
// log position, and the schemas and tables to dump.
func (d *dumper) readInstance(ctx context.Context) (instance, error) {
	var inst instance
	row := d.main.QueryRowContext(ctx, "SELECT @@version, @@hostname, CURRENT_USER()")
	if err := row.Scan(&inst.version, &inst.hostname, &inst.user); err != nil {
		return inst, err
	}
	if err := d.main.QueryRowContext(ctx, "SELECT @@GLOBAL.GTID_EXECUTED;").Scan(&inst.gtidExecuted); err != nil {
		return inst, err
	}
	file, pos, err := binaryLogStatus(ctx, d.main)
	if err != nil {
		d.con.warning("Could not fetch the binary log information: %s", mysqlError(err))
	} else {
		inst.binlogFile, inst.binlogPosition, inst.hasBinlog = file, pos, true
	}
	schemas, err := d.readSchemas(ctx)
	if err != nil {
		return inst, err
	}
	if len(schemas) == 0 {
		return inst, errNoSchemasSelected
	}
	inst.schemas = schemas
	tables := 0
	for _, s := range schemas {
		tables += len(s.tables)
	}
	d.con.info("%d schemas will be dumped and within them %d tables, 0 views.", len(schemas), tables)
	return inst, nil
}

func binaryLogStatus(ctx context.Context, c *sql.Conn) (string, uint64, error) {
	rows, err := c.QueryContext(ctx, "SHOW BINARY LOG STATUS")
	if err != nil {
		return "", 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", 0, err
	}
	if !rows.Next() {
		return "", 0, errors.New("no binary log status (binary logging off)")
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", 0, err
	}
	var pos uint64
	if _, err := fmt.Sscan(vals[1].String, &pos); err != nil {
		return "", 0, fmt.Errorf("binary log position %q: %v", vals[1].String, err)
	}
	return vals[0].String, pos, rows.Err()
}

// readSchemas lists the schemas the filters select (information_schema's
// SCHEMATA, as MySQL Shell reads them) and each one's tables.
func (d *dumper) readSchemas(ctx context.Context) ([]schemaInfo, error) {
	rows, err := d.main.QueryContext(ctx, "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.schemata")
	if err != nil {
		return nil, err
	}
	var out []schemaInfo
	for rows.Next() {
		var s schemaInfo
		if err := rows.Scan(&s.name, &s.charset, &s.collation); err != nil {
			rows.Close()
			return nil, err
		}
		if d.inv.opts.selects(s.name) {
			out = append(out, s)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	for i := range out {
		tables, err := showTables(ctx, d.main, out[i].name)
		if err != nil {
			return nil, err
		}
		out[i].tables = tables
	}
	return out, nil
}

// selects applies the schema filters: never the system schemas; only the
// included ones when includeSchemas is given; never the excluded ones.
func (o options) selects(schema string) bool {
	if excludedSchemas[schema] {
		return false
	}
	for _, e := range o.excludeSchemas {
		if e == schema {
			return false
		}
	}
	if len(o.includeSchemas) == 0 {
		return true
	}
	for _, in := range o.includeSchemas {
		if in == schema {
			return true
		}
	}
	return false
}

func showTables(ctx context.Context, c *sql.Conn, schema string) ([]string, error) {
	rows, err := c.QueryContext(ctx, "SHOW TABLES FROM "+quoteIdent(schema))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// close ends every session: the workers' transactions, then the main
// session, which releases the backup lock.
func (d *dumper) close() {
	for _, w := range d.workers {
		_, _ = w.ExecContext(context.Background(), "COMMIT")
		w.Close()
	}
	if d.main != nil {
		d.main.Close()
	}
	if d.db != nil {
		d.db.Close()
	}
}
