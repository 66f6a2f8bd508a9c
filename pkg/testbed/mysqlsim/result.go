package mysqlsim

import (
	"encoding/binary"
	"fmt"
	"strconv"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// colType is the MySQL type a result column is declared with.
type colType int

const (
	colString colType = iota // VARCHAR/LONGTEXT, utf8mb4
	colInt                   // BIGINT
	colUint                  // BIGINT UNSIGNED
)

type column struct {
	name string
	typ  colType
}

// table is a result set under construction. Values are nil (NULL), int64,
// uint64 or string.
type table struct {
	cols []column
	rows [][]any
}

const utf8mb4Collation = 255 // utf8mb4_0900_ai_ci

// build encodes the table as a text (COM_QUERY) or binary (COM_STMT_EXECUTE)
// result set. Fields are always declared explicitly so zero-row results keep
// their column types (go-mysql's helpers type them as NULL otherwise).
func (t *table) build(binaryProto bool) (*gomysql.Result, error) {
	rs := &gomysql.Resultset{Fields: make([]*gomysql.Field, len(t.cols)), FieldNames: map[string]int{}}
	for i, c := range t.cols {
		f := &gomysql.Field{Name: []byte(c.name), OrgName: []byte(c.name)}
		switch c.typ {
		case colString:
			f.Type, f.Charset, f.ColumnLength = gomysql.MYSQL_TYPE_VAR_STRING, utf8mb4Collation, 1<<16
		case colInt:
			f.Type, f.Charset, f.ColumnLength, f.Flag = gomysql.MYSQL_TYPE_LONGLONG, 63, 21, gomysql.BINARY_FLAG
		case colUint:
			f.Type, f.Charset, f.ColumnLength, f.Flag = gomysql.MYSQL_TYPE_LONGLONG, 63, 20, gomysql.BINARY_FLAG|gomysql.UNSIGNED_FLAG
		}
		rs.Fields[i] = f
		rs.FieldNames[c.name] = i
	}
	for _, row := range t.rows {
		if len(row) != len(t.cols) {
			return nil, fmt.Errorf("internal: row has %d values for %d columns", len(row), len(t.cols))
		}
		var data []byte
		var err error
		if binaryProto {
			data, err = t.binaryRow(row)
		} else {
			data, err = t.textRow(row)
		}
		if err != nil {
			return nil, err
		}
		rs.RowDatas = append(rs.RowDatas, data)
	}
	return gomysql.NewResult(rs), nil
}

func (t *table) textRow(row []any) ([]byte, error) {
	var out []byte
	for _, v := range row {
		if v == nil {
			out = append(out, 0xfb)
			continue
		}
		s, err := textValue(v)
		if err != nil {
			return nil, err
		}
		out = append(out, gomysql.PutLengthEncodedString([]byte(s))...)
	}
	return out, nil
}

func textValue(v any) (string, error) {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case string:
		return x, nil
	default:
		return "", fmt.Errorf("internal: unsupported value type %T", v)
	}
}

func (t *table) binaryRow(row []any) ([]byte, error) {
	bitmap := make([]byte, (len(row)+7+2)>>3)
	out := []byte{0}
	var vals []byte
	for j, v := range row {
		if v == nil {
			bitmap[(j+2)/8] |= 1 << (uint(j+2) % 8)
			continue
		}
		switch t.cols[j].typ {
		case colInt, colUint:
			var n uint64
			switch x := v.(type) {
			case int64:
				n = uint64(x)
			case uint64:
				n = x
			default:
				return nil, fmt.Errorf("internal: column %s wants an integer, got %T", t.cols[j].name, v)
			}
			vals = binary.LittleEndian.AppendUint64(vals, n)
		default:
			s, err := textValue(v)
			if err != nil {
				return nil, err
			}
			vals = append(vals, gomysql.PutLengthEncodedString([]byte(s))...)
		}
	}
	out = append(out, bitmap...)
	return append(out, vals...), nil
}

func okResult(affected uint64) *gomysql.Result {
	return &gomysql.Result{AffectedRows: affected}
}
