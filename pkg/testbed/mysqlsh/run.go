package mysqlsh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// Run is the stand-in's main: argv without the program name. It returns
// mysqlsh's exit code and prints what mysqlsh prints: progress on stdout,
// "ERROR: ..." (and notes, warnings) on stderr. No password is ever
// printed.
func Run(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, hooks Hooks) int {
	con := console{stdout: stdout, stderr: stderr}
	inv, err := parse(argv)
	if err != nil {
		return fail(con, err)
	}
	if inv.conn.passwordOnCommandLine {
		con.warning("Using a password on the command line interface can be insecure.")
	}
	if inv.conn.passwordsFromStdin {
		pw, err := readPassword(stdin)
		if err != nil {
			return fail(con, shellError{"Could not read the password from stdin: " + err.Error()})
		}
		inv.conn.password = pw
	}
	dir, err := outputDir(inv.outputURL)
	if err != nil {
		return fail(con, err)
	}
	d := &dumper{inv: inv, con: con, hooks: hooks, begin: time.Now()}
	defer d.close()
	if d.db, err = inv.conn.open(ctx, inv.opts.threads+1); err != nil {
		con.error("%s", mysqlError(err))
		return ExitError
	}
	if d.main, err = d.db.Conn(ctx); err != nil {
		con.error("%s", mysqlError(err))
		return ExitError
	}
	if err := d.run(ctx, dir); err != nil {
		return fail(con, err)
	}
	return ExitOK
}

func fail(con console, err error) int {
	var ae argError
	if errors.As(err, &ae) {
		con.error("%s", ae.msg)
		return ExitArgument
	}
	con.error("%s", err.Error())
	return ExitError
}

// run takes the locks, writes the dump-wide and schema files, dumps the
// data and writes @.done.json last.
func (d *dumper) run(ctx context.Context, dir string) error {
	inst, err := d.lock(ctx)
	if err != nil {
		return dumpError(err)
	}
	if err := os.Mkdir(dir, 0o750); err != nil && !os.IsExist(err) {
		return fmt.Errorf("Cannot proceed with the dump, the directory containing '%s' does not exist at the target location: %v", d.inv.outputURL, err)
	}
	if err := d.writeStarted(dir, inst); err != nil {
		return err
	}
	d.con.info("Writing global DDL files")
	if err := writeGlobalSQL(dir, inst); err != nil {
		return err
	}
	for _, s := range inst.schemas {
		if err := d.writeSchema(dir, s); err != nil {
			return err
		}
	}
	d.con.info("Running data dump using %d threads.", d.inv.opts.threads)
	results, err := d.dumpData(ctx, dir, inst.schemas)
	if err != nil {
		return dumpError(err)
	}
	sort.Slice(results, func(i, j int) bool {
		return results[i].schema+"\x00"+results[i].table < results[j].schema+"\x00"+results[j].table
	})
	for _, r := range results {
		if err := d.writeTableMeta(dir, r); err != nil {
			return err
		}
	}
	if err := writeDone(dir, results, time.Now()); err != nil {
		return err
	}
	d.summary(inst, results)
	return nil
}

// dumpError is how Util.dumpInstance reports a runtime failure.
func dumpError(err error) error {
	var ae argError
	if errors.As(err, &ae) {
		return err
	}
	return shellError{"Util.dumpInstance: " + err.Error()}
}

func (d *dumper) summary(inst instance, results []tableResult) {
	var rows, bytes uint64
	for _, r := range results {
		rows, bytes = rows+r.rows, bytes+r.bytes
	}
	elapsed := time.Since(d.begin).Round(time.Second)
	d.con.info("Dump duration: %s", clock(elapsed))
	d.con.info("Total duration: %s", clock(elapsed))
	d.con.info("Schemas dumped: %d", len(inst.schemas))
	d.con.info("Tables dumped: %d", len(results))
	d.con.info("Uncompressed data size: %d bytes", bytes)
	d.con.info("Rows written: %d", rows)
}

func clock(d time.Duration) string {
	s := int(d.Seconds())
	return fmt.Sprintf("%02d:%02d:%02ds", s/3600, s/60%60, s%60)
}
