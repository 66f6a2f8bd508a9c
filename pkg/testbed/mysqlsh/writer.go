package mysqlsh

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/shipstream/bloodraven/pkg/backup/dump"
)

// Version strings the stand-in writes into @.json: MySQL Shell 9.7's
// dumper line and its dump format version, so that a reader of the layout
// sees what it would see from the real tool; "test-bed stand-in" marks it.
const (
	dumperVersion = "mysqlsh Ver 9.7.0 for Linux on x86_64 - for MySQL 9.7.0 (test-bed stand-in)"
	formatVersion = "2.0.1"
	timeLayout    = "2006-01-02 15:04:05"
	// idxEvery is how often a chunk's .idx records the offset reached, as
	// MySQL Shell's index files do (docs/backup-dump-layout.md).
	idxEvery = 1 << 20
)

// outputDir resolves outputUrl to a local directory and refuses one that
// exists and is not empty, as dumpInstance does.
func outputDir(url string) (string, error) {
	path := strings.TrimPrefix(url, "file://")
	if strings.Contains(path, "://") {
		return "", argError{fmt.Sprintf("Cannot proceed with the dump: the test-bed mysqlsh stand-in writes only to a local directory, not %s", url)}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", argError{err.Error()}
	}
	entries, err := os.ReadDir(abs)
	switch {
	case err == nil && len(entries) > 0:
		return "", argError{fmt.Sprintf("Cannot proceed with the dump, the specified directory '%s' already exists at the target location %s and is not empty.", url, abs)}
	case err != nil && !os.IsNotExist(err):
		return "", argError{fmt.Sprintf("Cannot proceed with the dump: %v", err)}
	}
	return abs, nil
}

// writeJSON writes v as MySQL Shell writes its metadata: indented JSON.
func writeJSON(dir, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o640)
}

// writeStarted writes @.json, the file MySQL Shell writes when the dump
// starts.
func (d *dumper) writeStarted(dir string, inst instance) error {
	names := make([]string, 0, len(inst.schemas))
	basenames := map[string]string{}
	for _, s := range inst.schemas {
		names = append(names, s.name)
		basenames[s.name] = dump.SchemaBasename(s.name)
	}
	doc := ordered{
		{"dumper", dumperVersion}, {"version", formatVersion}, {"origin", "dumpInstance"},
		{"options", d.inv.opts.typed()}, {"schemas", names}, {"basenames", basenames},
		{"defaultCharacterSet", "utf8mb4"}, {"tzUtc", true}, {"bytesPerChunk", d.inv.opts.bytesPerChunk},
		{"user", d.inv.conn.user}, {"hostname", clientHostname()}, {"server", inst.hostname}, {"serverVersion", inst.version},
	}
	if inst.hasBinlog {
		doc = append(doc, kv{"binlogFile", inst.binlogFile}, kv{"binlogPosition", inst.binlogPosition})
	}
	doc = append(doc, kv{"gtidExecuted", inst.gtidExecuted}, kv{"gtidExecutedInconsistent", !d.inv.opts.consistent},
		kv{"consistent", d.inv.opts.consistent}, kv{"targetVersion", "9.7.0"}, kv{"partialRevokes", false},
		kv{"compatibilityOptions", []string{}}, kv{"capabilities", []string{}}, kv{"checksum", false},
		kv{"begin", d.begin.UTC().Format(timeLayout)})
	return writeJSON(dir, dump.StartedFile, doc)
}

// writeGlobalSQL writes @.sql and @.post.sql: with no users, routines or
// events to restore they hold only MySQL Shell's header.
func writeGlobalSQL(dir string, inst instance) error {
	header := fmt.Sprintf("-- MySQLShell dump %s  Distrib Ver 9.7.0 for Linux on x86_64 - for MySQL 9.7.0\n--\n-- Host: %s\n-- ------------------------------------------------------\n-- Server version\t%s\n\n",
		formatVersion, inst.hostname, inst.version)
	for _, name := range []string{dump.PreSQLFile, dump.PostSQLFile} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(header), 0o640); err != nil {
			return err
		}
	}
	return nil
}

func (d *dumper) writeSchema(dir string, s schemaInfo) error {
	base := dump.SchemaBasename(s.name)
	tableBases := map[string]string{}
	for _, t := range s.tables {
		tableBases[t] = dump.TableBasename(s.name, t)
	}
	doc := ordered{{"schema", s.name}, {"includesDdl", true}, {"includesViewsDdl", true}, {"includesData", true},
		{"tables", nonNil(s.tables)}, {"views", []string{}}, {"events", []string{}}, {"functions", []string{}},
		{"procedures", []string{}}, {"basenames", tableBases}}
	if err := writeJSON(dir, base+".json", doc); err != nil {
		return err
	}
	ddl := fmt.Sprintf("-- MySQLShell dump %s\n\nCREATE DATABASE /*!32312 IF NOT EXISTS*/ %s /*!40100 DEFAULT CHARACTER SET %s COLLATE %s */ /*!80016 DEFAULT ENCRYPTION='N' */;\n",
		formatVersion, quoteIdent(s.name), s.charset, s.collation)
	return os.WriteFile(filepath.Join(dir, base+".sql"), []byte(ddl), 0o640)
}

// tableResult is what dumping one table's data produced.
type tableResult struct {
	schema, table string
	columns       []string
	rows, bytes   uint64
	chunks        map[string]uint64 // data file name -> uncompressed bytes
}

// writeTableMeta writes <schema>@<table>.json and .sql. The simulator keeps
// column names only, no types or keys, so the table's DDL names every
// column as longtext (docs/mysqlsh-stand-in.md).
func (d *dumper) writeTableMeta(dir string, r tableResult) error {
	base := dump.TableBasename(r.schema, r.table)
	doc := ordered{
		{"options", ordered{{"schema", r.schema}, {"table", r.table}, {"columns", nonNil(r.columns)},
			{"defaultCharacterSet", "utf8mb4"}, {"fieldsTerminatedBy", "\t"}, {"fieldsEnclosedBy", ""},
			{"fieldsOptionallyEnclosed", false}, {"fieldsEscapedBy", "\\"}, {"linesTerminatedBy", "\n"}}},
		{"triggers", []string{}}, {"histograms", []string{}}, {"includesData", true}, {"includesDdl", true},
		{"extension", "tsv"}, {"chunking", d.inv.opts.chunking}, {"compression", d.inv.opts.compression},
		{"primaryIndex", []string{}}, {"partitions", []string{}},
	}
	if err := writeJSON(dir, base+".json", doc); err != nil {
		return err
	}
	var cols []string
	for _, c := range r.columns {
		cols = append(cols, "  "+quoteIdent(c)+" longtext")
	}
	ddl := fmt.Sprintf("-- MySQLShell dump %s\n\nCREATE TABLE IF NOT EXISTS %s (\n%s\n);\n", formatVersion, quoteIdent(r.table), strings.Join(cols, ",\n"))
	return os.WriteFile(filepath.Join(dir, base+".sql"), []byte(ddl), 0o640)
}

// dumpData reads every table in the worker sessions (each in its own
// snapshot when consistent) and writes their chunks.
func (d *dumper) dumpData(ctx context.Context, dir string, schemas []schemaInfo) ([]tableResult, error) {
	type job struct{ schema, table string }
	jobs := make(chan job)
	var (
		mu      sync.Mutex
		results []tableResult
		first   error
		wg      sync.WaitGroup
	)
	for _, w := range d.workers {
		wg.Add(1)
		go func(w *sql.Conn) {
			defer wg.Done()
			for j := range jobs {
				r, err := d.dumpTable(ctx, w, dir, j.schema, j.table)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				results = append(results, r)
				mu.Unlock()
			}
		}(w)
	}
	for _, s := range schemas {
		for _, t := range s.tables {
			jobs <- job{s.name, t}
		}
	}
	close(jobs)
	wg.Wait()
	return results, first
}

func (d *dumper) dumpTable(ctx context.Context, w *sql.Conn, dir, schema, table string) (tableResult, error) {
	r := tableResult{schema: schema, table: table, chunks: map[string]uint64{}}
	rows, err := w.QueryContext(ctx, "SELECT * FROM "+quoteIdent(schema)+"."+quoteIdent(table))
	if err != nil {
		return r, fmt.Errorf("Error dumping data of table %s.%s: %s", quoteIdent(schema), quoteIdent(table), mysqlError(err))
	}
	defer rows.Close()
	if r.columns, err = rows.Columns(); err != nil {
		return r, err
	}
	cw := &chunkWriter{dir: dir, base: dump.TableBasename(schema, table), opts: d.inv.opts, result: &r}
	vals := make([]sql.RawBytes, len(r.columns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var line []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return r, err
		}
		line = appendTSVRow(line[:0], vals)
		if err := cw.write(line); err != nil {
			return r, err
		}
		r.rows++
	}
	if err := rows.Err(); err != nil {
		return r, err
	}
	return r, cw.finish()
}

// appendTSVRow appends one row in MySQL Shell's default dialect: fields
// separated by tab, the row ended by newline, NULL as \N, and \0, \b, \n,
// \r, \t, Ctrl-Z and backslash escaped with a backslash.
func appendTSVRow(b []byte, vals []sql.RawBytes) []byte {
	for i, v := range vals {
		if i > 0 {
			b = append(b, '\t')
		}
		if v == nil {
			b = append(b, '\\', 'N')
			continue
		}
		for _, c := range v {
			switch c {
			case 0:
				b = append(b, '\\', '0')
			case '\b':
				b = append(b, '\\', 'b')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case 0x1a:
				b = append(b, '\\', 'Z')
			case '\\':
				b = append(b, '\\', '\\')
			default:
				b = append(b, c)
			}
		}
	}
	return append(b, '\n')
}

// chunkWriter splits a table's rows into chunk files of about bytesPerChunk
// uncompressed bytes each, with their .idx files. The last chunk is named
// with "@@" once it is known to be the last; a table without rows still
// gets one (empty) last chunk. With chunking off there is one file named
// after the table.
type chunkWriter struct {
	dir, base string
	opts      options
	result    *tableResult

	n       int
	name    string
	file    *os.File
	buf     *bufio.Writer
	enc     io.WriteCloser
	written uint64
	sinceIx uint64
	idx     []byte
}

func (c *chunkWriter) ext() string {
	if c.opts.compression == "zstd" {
		return "tsv.zst"
	}
	return "tsv"
}

func (c *chunkWriter) open() error {
	c.name = dump.ChunkFile(c.base, c.n, false, c.ext())
	if !c.opts.chunking {
		c.name = c.base + "." + c.ext()
	}
	f, err := os.OpenFile(filepath.Join(c.dir, c.name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	c.file, c.buf = f, bufio.NewWriterSize(f, 256<<10)
	c.enc = nopCloser{c.buf}
	if c.opts.compression == "zstd" {
		enc, err := zstd.NewWriter(c.buf)
		if err != nil {
			return err
		}
		c.enc = enc
	}
	c.written, c.sinceIx, c.idx = 0, 0, nil
	return nil
}

func (c *chunkWriter) write(line []byte) error {
	if c.file == nil {
		if err := c.open(); err != nil {
			return err
		}
	}
	if _, err := c.enc.Write(line); err != nil {
		return err
	}
	c.written += uint64(len(line))
	c.sinceIx += uint64(len(line))
	if c.sinceIx >= idxEvery {
		c.idx = binary.BigEndian.AppendUint64(c.idx, c.written)
		c.sinceIx %= idxEvery
	}
	if c.opts.chunking && int64(c.written) >= c.opts.bytesPerChunk {
		if err := c.close(false); err != nil {
			return err
		}
		c.n++
	}
	return nil
}

// close ends the current chunk; the last one is renamed to its "@@" name.
func (c *chunkWriter) close(last bool) error {
	if err := c.enc.Close(); err != nil {
		return err
	}
	if err := c.buf.Flush(); err != nil {
		return err
	}
	if err := c.file.Close(); err != nil {
		return err
	}
	c.file = nil
	if last && c.opts.chunking {
		final := dump.ChunkFile(c.base, c.n, true, c.ext())
		if err := os.Rename(filepath.Join(c.dir, c.name), filepath.Join(c.dir, final)); err != nil {
			return err
		}
		c.name = final
	}
	c.idx = binary.BigEndian.AppendUint64(c.idx, c.written) // the total, as MySQL Shell's close writes it
	if err := os.WriteFile(filepath.Join(c.dir, c.name+".idx"), c.idx, 0o640); err != nil {
		return err
	}
	c.result.chunks[c.name] = c.written
	c.result.bytes += c.written
	return nil
}

// finish closes the last chunk; when the rows ended exactly at a chunk
// boundary (or there were none) an empty last chunk is written.
func (c *chunkWriter) finish() error {
	if c.file == nil {
		if err := c.open(); err != nil {
			return err
		}
	}
	return c.close(true)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// writeDone writes @.done.json last: the dump is complete.
func writeDone(dir string, results []tableResult, end time.Time) error {
	var total uint64
	bytes := map[string]map[string]uint64{}
	rows := map[string]map[string]uint64{}
	chunks := map[string]uint64{}
	for _, r := range results {
		if bytes[r.schema] == nil {
			bytes[r.schema], rows[r.schema] = map[string]uint64{}, map[string]uint64{}
		}
		bytes[r.schema][r.table], rows[r.schema][r.table] = r.bytes, r.rows
		for name, n := range r.chunks {
			chunks[name] = n
		}
		total += r.bytes
	}
	doc := ordered{{"end", end.UTC().Format(timeLayout)}, {"dataBytes", total}, {"tableDataBytes", bytes},
		{"tableRows", rows}, {"chunkFileBytes", chunks}}
	return writeJSON(dir, dump.DoneFile, doc)
}

// clientHostname is the host the dump ran on, as @.json's hostname is
// (the server's own name is its server key).
func clientHostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "localhost"
	}
	return h
}

// typed is the options as given on the command line with the types MySQL
// Shell's command-line mapper gives them: true/false as booleans, digits
// as numbers, the schema filters as lists, the rest as strings.
func (o options) typed() map[string]any {
	out := map[string]any{}
	for k, v := range o.given {
		switch {
		case k == "includeSchemas":
			out[k] = nonNil(o.includeSchemas)
		case k == "excludeSchemas":
			out[k] = nonNil(o.excludeSchemas)
		case v == "true" || v == "false":
			out[k] = v == "true"
		default:
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				out[k] = n
			} else {
				out[k] = v
			}
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ordered is a JSON object whose keys keep their order, as MySQL Shell's
// writer keeps them.
type ordered []kv

type kv struct {
	k string
	v any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}
