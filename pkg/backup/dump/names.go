package dump

import (
	"fmt"
	"strconv"
	"strings"
)

// MySQL Shell names a schema's files by its basename: the name with every
// reserved US-ASCII byte percent-encoded (upper-case hex), bytes of 128 and
// above kept as they are. Only letters, digits, "-", ".", "_" and "~" are
// kept; "@" is encoded, so "@" separates the schema, table and chunk parts
// of a file name unambiguously (docs/backup-dump-layout.md).

func reserved(c byte) bool {
	switch {
	case c >= 128:
		return false
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return false
	}
	return !strings.ContainsRune("-._~", rune(c))
}

func encode(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if c := name[i]; reserved(c) {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// SchemaBasename is the basename of a schema's files (<basename>.json,
// <basename>.sql).
func SchemaBasename(schema string) string { return encode(schema) }

// TableBasename is the basename of a table's files (<basename>.json,
// <basename>.sql, its chunks).
func TableBasename(schema, table string) string { return encode(schema) + "@" + encode(table) }

// ChunkFile is the name of a table's data chunk n; the last chunk is marked
// with a second "@". ext is "tsv" or "tsv.zst"; its index is the same name
// with ".idx" appended.
func ChunkFile(tableBasename string, n int, last bool, ext string) string {
	sep := "@"
	if last {
		sep = "@@"
	}
	return tableBasename + sep + strconv.Itoa(n) + "." + ext
}
