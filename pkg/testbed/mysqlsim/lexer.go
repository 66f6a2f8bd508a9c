package mysqlsim

import (
	"fmt"
	"strings"
)

// tokKind classifies the lexemes of the small SQL subset the simulator reads.
type tokKind int

const (
	tIdent  tokKind = iota // bare word or keyword (compare with isKw)
	tQIdent                // `quoted identifier`
	tString                // 'string' or "string", unescaped
	tNumber                // 123 or 1.5
	tParam                 // ?
	tSysVar                // @@[global.|session.]name, text holds the name part after @@
	tPunct                 // ( ) , = ; . * - + < > ! :
)

type token struct {
	kind     tokKind
	text     string
	pos, end int // byte offsets in the statement
}

func (t token) isKw(words ...string) bool {
	if t.kind != tIdent {
		return false
	}
	for _, w := range words {
		if strings.EqualFold(t.text, w) {
			return true
		}
	}
	return false
}

func (t token) isPunct(p string) bool { return t.kind == tPunct && t.text == p }

// lex splits a statement into tokens. Comments (/* */, -- and #) are skipped.
func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, errParse(s[i:])
			}
			i += end + 4
		case c == '#' || c == '-' && i+2 < len(s) && s[i+1] == '-' && (s[i+2] == ' ' || s[i+2] == '\t'):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			str, n, err := lexString(s[i:], c)
			if err != nil {
				return nil, err
			}
			out = append(out, token{tString, str, i, i + n})
			i += n
		case c == '`':
			end := strings.IndexByte(s[i+1:], '`')
			if end < 0 {
				return nil, errParse(s[i:])
			}
			out = append(out, token{tQIdent, s[i+1 : i+1+end], i, i + end + 2})
			i += end + 2
		case c == '?':
			out = append(out, token{tParam, "?", i, i + 1})
			i++
		case c == '@' && i+1 < len(s) && s[i+1] == '@':
			j := i + 2
			for j < len(s) && (isWordByte(s[j]) || s[j] == '.') {
				j++
			}
			out = append(out, token{tSysVar, s[i+2 : j], i, j})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			// identifiers may start with digits in MySQL (e.g. 1abc); treat as ident
			if j < len(s) && isWordByte(s[j]) {
				for j < len(s) && isWordByte(s[j]) {
					j++
				}
				out = append(out, token{tIdent, s[i:j], i, j})
			} else {
				out = append(out, token{tNumber, s[i:j], i, j})
			}
			i = j
		case isWordByte(c) || c == '@':
			j := i + 1
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			out = append(out, token{tIdent, s[i:j], i, j})
			i = j
		case strings.IndexByte("(),=;.*-+<>!:", c) >= 0:
			if (c == '<' || c == '>' || c == '!') && i+1 < len(s) && (s[i+1] == '=' || s[i+1] == '>') {
				out = append(out, token{tPunct, s[i : i+2], i, i + 2})
				i += 2
				continue
			}
			out = append(out, token{tPunct, string(c), i, i + 1})
			i++
		default:
			return nil, errParse(s[i:])
		}
	}
	return out, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// lexString reads a quoted string starting at s[0] and returns its value and
// length, handling backslash escapes and doubled quotes as MySQL does.
func lexString(s string, q byte) (string, int, error) {
	var sb strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				sb.WriteByte('\n')
			case 't':
				sb.WriteByte('\t')
			case 'r':
				sb.WriteByte('\r')
			case '0':
				sb.WriteByte(0)
			case 'Z':
				sb.WriteByte(26)
			default:
				sb.WriteByte(s[i])
			}
		case c == q && i+1 < len(s) && s[i+1] == q:
			sb.WriteByte(q)
			i++
		case c == q:
			return sb.String(), i + 1, nil
		default:
			sb.WriteByte(c)
		}
	}
	return "", 0, errParse(s)
}

// quoteString renders v as a MySQL string literal.
func quoteString(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`, "\n", `\n`, "\r", `\r`, "\x1a", `\Z`)
	return "'" + r.Replace(v) + "'"
}

// splitStatements splits a multi-statement string on ';' outside quotes and
// comments (multiStatements=true sends several statements in one COM_QUERY).
func splitStatements(s string) ([]string, error) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	var out []string
	start := 0
	for _, t := range toks {
		if t.isPunct(";") {
			if stmt := strings.TrimSpace(s[start:t.pos]); stmt != "" {
				out = append(out, stmt)
			}
			start = t.end
		}
	}
	if stmt := strings.TrimSpace(s[start:]); stmt != "" {
		out = append(out, stmt)
	}
	return out, nil
}

// cursor walks the tokens of one statement.
type cursor struct {
	sql  string
	toks []token
	i    int
}

func (c *cursor) peek() token {
	if c.i < len(c.toks) {
		return c.toks[c.i]
	}
	return token{kind: tPunct, text: "", pos: len(c.sql), end: len(c.sql)}
}

func (c *cursor) done() bool { return c.i >= len(c.toks) }

func (c *cursor) next() token {
	t := c.peek()
	if c.i < len(c.toks) {
		c.i++
	}
	return t
}

// acceptKw consumes the keywords in sequence if all are present.
func (c *cursor) acceptKw(words ...string) bool {
	for k, w := range words {
		if c.i+k >= len(c.toks) || !c.toks[c.i+k].isKw(w) {
			return false
		}
	}
	c.i += len(words)
	return true
}

func (c *cursor) acceptPunct(p string) bool {
	if c.peek().isPunct(p) {
		c.i++
		return true
	}
	return false
}

// errHere is the parse error MySQL gives: the text from the offending token on.
func (c *cursor) errHere() error {
	return errParse(c.sql[c.peek().pos:])
}

func (c *cursor) expectKw(w string) error {
	if !c.acceptKw(w) {
		return c.errHere()
	}
	return nil
}

func (c *cursor) expectEnd() error {
	if !c.done() {
		return c.errHere()
	}
	return nil
}

// ident reads an identifier (bare or quoted).
func (c *cursor) ident() (string, error) {
	t := c.peek()
	if t.kind != tIdent && t.kind != tQIdent {
		return "", c.errHere()
	}
	c.i++
	return t.text, nil
}

// qualifiedName reads name or db.name.
func (c *cursor) qualifiedName() (db, name string, err error) {
	if name, err = c.ident(); err != nil {
		return "", "", err
	}
	if c.acceptPunct(".") {
		db = name
		if name, err = c.ident(); err != nil {
			return "", "", err
		}
	}
	return db, name, nil
}

// stringLit reads a string literal.
func (c *cursor) stringLit() (string, error) {
	t := c.peek()
	if t.kind != tString {
		return "", c.errHere()
	}
	c.i++
	return t.text, nil
}

// intLit reads an unsigned integer literal.
func (c *cursor) intLit() (int64, error) {
	t := c.peek()
	var n int64
	if t.kind != tNumber {
		return 0, c.errHere()
	}
	if _, err := fmt.Sscan(t.text, &n); err != nil || strings.Contains(t.text, ".") {
		return 0, c.errHere()
	}
	c.i++
	return n, nil
}
