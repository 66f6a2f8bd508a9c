// Package gtid implements MySQL global transaction identifier (GTID) sets as
// immutable values: parsing and MySQL's canonical formatting, including the
// tagged GTIDs of MySQL 8.3+ (uuid:tag:gno), and the set algebra the operator
// uses to compare sites (union, subtract, intersect, subset tests).
//
// Reference: MySQL 9.7 Reference Manual, "GTID Format and Storage" and
// "GTID Sets" (https://dev.mysql.com/doc/refman/9.7/en/replication-gtids-concepts.html).
package gtid

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxGNO is the largest transaction number MySQL accepts (2^63-2; 2^63-1 is
// reserved as the exclusive end of the largest interval).
const MaxGNO int64 = 1<<63 - 2

// maxTagLen is the longest tag MySQL accepts (32 characters).
const maxTagLen = 32

// GTID is one global transaction identifier: a source UUID, an optional tag
// (MySQL 8.3+) and a transaction number.
type GTID struct {
	UUID string // canonical lowercase 8-4-4-4-12 form
	Tag  string // lowercase; empty for an untagged GTID
	GNO  int64
}

// String formats the GTID as MySQL does: uuid:gno or uuid:tag:gno.
func (g GTID) String() string {
	if g.Tag == "" {
		return g.UUID + ":" + strconv.FormatInt(g.GNO, 10)
	}
	return g.UUID + ":" + g.Tag + ":" + strconv.FormatInt(g.GNO, 10)
}

// ParseGTID parses a single GTID ("uuid:gno" or "uuid:tag:gno").
func ParseGTID(s string) (GTID, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	var g GTID
	var err error
	switch len(parts) {
	case 2:
	case 3:
		if g.Tag, err = parseTag(parts[1]); err != nil {
			return GTID{}, fmt.Errorf("gtid %q: %w", s, err)
		}
	default:
		return GTID{}, fmt.Errorf("gtid %q: want uuid:gno or uuid:tag:gno", s)
	}
	if g.UUID, err = parseUUID(parts[0]); err != nil {
		return GTID{}, fmt.Errorf("gtid %q: %w", s, err)
	}
	if g.GNO, err = parseGNO(parts[len(parts)-1]); err != nil {
		return GTID{}, fmt.Errorf("gtid %q: %w", s, err)
	}
	return g, nil
}

// parseUUID accepts the 36-character dashed form in any letter case and
// returns it lowercased.
func parseUUID(s string) (string, error) {
	s = strings.TrimSpace(s)
	if len(s) != 36 {
		return "", fmt.Errorf("uuid %q: want 36 characters in 8-4-4-4-12 form", s)
	}
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", fmt.Errorf("uuid %q: want '-' at position %d", s, i+1)
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return "", fmt.Errorf("uuid %q: invalid hex digit %q", s, c)
			}
		}
	}
	return string(b), nil
}

// parseTag validates a GTID tag as MySQL does: a letter or underscore
// followed by letters, digits or underscores, at most 32 characters,
// case-insensitive (normalised to lowercase).
func parseTag(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxTagLen {
		return "", fmt.Errorf("tag %q: want 1 to %d characters", s, maxTagLen)
	}
	t := strings.ToLower(s)
	for i := 0; i < len(t); i++ {
		c := t[i]
		letter := c >= 'a' && c <= 'z' || c == '_'
		if !letter && (i == 0 || !(c >= '0' && c <= '9')) {
			return "", fmt.Errorf("tag %q: want [a-z_][a-z0-9_]*", s)
		}
	}
	return t, nil
}

func parseGNO(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty transaction number")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("transaction number %q: not a decimal number", s)
		}
	}
	if len(s) > 1 && s[0] == '0' {
		// MySQL would read a leading zero as octal ("010" is 8): refuse it
		// rather than mean something else than MySQL does.
		return 0, fmt.Errorf("transaction number %q: leading zero (MySQL reads it as octal)", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > MaxGNO {
		return 0, fmt.Errorf("transaction number %q: want 1 to %d", s, MaxGNO)
	}
	return n, nil
}
