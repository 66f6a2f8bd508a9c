package mysqlsim

import "strings"

// Schema character sets and collations (manual, "Database Character Set and
// Collation", "The INFORMATION_SCHEMA SCHEMATA Table"). CREATE DATABASE
// takes [DEFAULT] CHARACTER SET|CHARSET [=] name and [DEFAULT] COLLATE [=]
// name; a character set alone takes its default collation, a collation
// alone its character set, neither the server's (character_set_server
// utf8mb4, collation_server utf8mb4_0900_ai_ci, 9.7's defaults). The
// simulator knows a handful of character sets and their collations; the
// settings travel with the schema through the journal (the CREATE op's
// cols), the checkpoint, clone, and replication (the statement text).

// Server defaults of MySQL 9.7.
const (
	defaultCharset   = "utf8mb4"
	defaultCollation = "utf8mb4_0900_ai_ci"
)

// charsets maps each known character set to its collations, the default
// one first.
var charsets = map[string][]string{
	"utf8mb4": {"utf8mb4_0900_ai_ci", "utf8mb4_0900_as_cs", "utf8mb4_0900_as_ci", "utf8mb4_0900_bin", "utf8mb4_bin",
		"utf8mb4_general_ci", "utf8mb4_unicode_ci", "utf8mb4_unicode_520_ci"},
	"utf8mb3": {"utf8mb3_general_ci", "utf8mb3_bin", "utf8mb3_unicode_ci"},
	"latin1":  {"latin1_swedish_ci", "latin1_bin", "latin1_general_ci", "latin1_general_cs"},
	"ascii":   {"ascii_general_ci", "ascii_bin"},
	"binary":  {"binary"},
}

// MySQL error numbers of the character set checks.
const (
	erUnknownCharacterSet      = 1115
	erCollationCharsetMismatch = 1253
	erUnknownCollation         = 1273
)

func charsetOf(collation string) (string, bool) {
	for cs, cols := range charsets {
		for _, c := range cols {
			if c == collation {
				return cs, true
			}
		}
	}
	return "", false
}

// parseSchemaOptions reads CREATE DATABASE's options up to the end and
// resolves them to the schema's character set and collation.
func parseSchemaOptions(c *cursor) (charset, collation string, err error) {
	for !c.done() {
		c.acceptKw("DEFAULT")
		var isCollate bool
		switch {
		case c.acceptKw("CHARACTER", "SET"), c.acceptKw("CHARSET"):
		case c.acceptKw("COLLATE"):
			isCollate = true
		default:
			return "", "", c.errHere()
		}
		c.acceptPunct("=")
		name, err := c.ident()
		if err != nil {
			return "", "", err
		}
		name = strings.ToLower(name)
		if isCollate {
			collation = name
		} else {
			charset = name
		}
	}
	return resolveSchemaSettings(charset, collation)
}

// resolveSchemaSettings fills what CREATE DATABASE left out.
func resolveSchemaSettings(charset, collation string) (string, string, error) {
	if charset != "" {
		if _, ok := charsets[charset]; !ok {
			return "", "", myErr(erUnknownCharacterSet, "Unknown character set: '%s'", charset)
		}
	}
	if collation != "" {
		cs, ok := charsetOf(collation)
		if !ok {
			return "", "", myErr(erUnknownCollation, "Unknown collation: '%s'", collation)
		}
		if charset != "" && cs != charset {
			return "", "", myErr(erCollationCharsetMismatch, "COLLATION '%s' is not valid for CHARACTER SET '%s'", collation, charset)
		}
		return cs, collation, nil
	}
	if charset == "" {
		return defaultCharset, defaultCollation, nil
	}
	return charset, charsets[charset][0], nil
}

// settingsOf is a CREATE DATABASE op's settings (cols: charset, collation;
// none in ops written before the simulator kept them: the defaults).
func settingsOf(op writeOp) (string, string) {
	if len(op.cols) == 2 {
		return op.cols[0], op.cols[1]
	}
	return defaultCharset, defaultCollation
}

// schemaSettings are a stored schema's (the defaults when unset).
func (d *database) schemaSettings() (string, string) {
	if d.charset == "" {
		return defaultCharset, defaultCollation
	}
	return d.charset, d.collation
}

var schemataColumns = []column{{"CATALOG_NAME", colString}, {"SCHEMA_NAME", colString},
	{"DEFAULT_CHARACTER_SET_NAME", colString}, {"DEFAULT_COLLATION_NAME", colString}, {"SQL_PATH", colString},
	{"DEFAULT_ENCRYPTION", colString}}

func isSchemataTable(db, name string) bool {
	return strings.EqualFold(db, "information_schema") && strings.EqualFold(name, "schemata")
}

// selectSchemata answers SELECT … FROM information_schema.SCHEMATA [WHERE
// SCHEMA_NAME = 'name']. A session sees the schemas it holds a privilege
// on, or all with SHOW DATABASES (manual, "SHOW DATABASES Statement").
func (s *Server) selectSchemata(sess *session, items []selItem, c *cursor) (*table, error) {
	want, filtered := "", false
	if c.acceptKw("WHERE") {
		col, err := c.ident()
		if err != nil {
			return nil, err
		}
		if !strings.EqualFold(col, "SCHEMA_NAME") {
			return nil, errNotSupported("a SCHEMATA filter other than SCHEMA_NAME = 'name' in the Bloodraven MySQL simulator")
		}
		if !c.acceptPunct("=") {
			return nil, c.errHere()
		}
		if want, err = c.stringLit(); err != nil {
			return nil, err
		}
		filtered = true
	}
	if err := c.expectEnd(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var rows [][]any
	for name, d := range s.st.dbs {
		if (filtered && name != want) || !sess.seesSchema(name) {
			continue
		}
		cs, coll := d.schemaSettings()
		rows = append(rows, []any{"def", name, cs, coll, nil, "NO"})
	}
	s.mu.Unlock()
	sortRowsByColumn(rows, 1)
	return project(schemataColumns, rows, items)
}

// seesSchema: SHOW DATABASES, any global privilege, or one on db.
func (sess *session) seesSchema(db string) bool {
	if sess.system || strings.EqualFold(db, "information_schema") {
		return true
	}
	ps := sess.privs.Load()
	if ps == nil {
		return false
	}
	for p, ok := range ps.global {
		if ok && p != "USAGE" {
			return true
		}
	}
	for _, ok := range ps.dbs[db] {
		if ok {
			return true
		}
	}
	return false
}

func sortRowsByColumn(rows [][]any, i int) {
	for a := 1; a < len(rows); a++ {
		for b := a; b > 0 && rows[b-1][i].(string) > rows[b][i].(string); b-- {
			rows[b-1], rows[b] = rows[b], rows[b-1]
		}
	}
}
