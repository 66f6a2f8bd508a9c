// Package binlogfile writes and reads binary log files in MySQL's v4 format as
// MySQL 9.7 writes them with binlog_format=ROW, binlog_row_image=FULL and
// binlog_checksum=CRC32: the magic number, a format description, the
// previous-GTIDs event, and per transaction a GTID event, BEGIN, table map
// and row events and XID (or one query event for DDL); a rotate event at
// rotation and a stop event at a clean shutdown. A FileSet keeps the numbered
// files (binlog.000001, ...) and their index file in one directory.
//
// It is pure file handling: it knows nothing of the simulator's server. The
// event layouts follow MySQL's libs/mysql/binlog/event (control_events.h,
// statement_events.h, rows_event.h) and libs/mysql/serialization for the
// tagged GTID event; docs/mysql-simulator.md ("Binary log") lists what is
// modelled and where it deviates.
package binlogfile

import (
	"encoding/binary"
	"hash/crc32"
)

// Event types (libs/mysql/binlog/event/binlog_event.h, Log_event_type).
const (
	typeQuery             = 2
	typeStop              = 3
	typeRotate            = 4
	typeFormatDescription = 15
	typeXID               = 16
	typeTableMap          = 19
	typeWriteRows         = 30
	typeDeleteRows        = 32
	typeGTID              = 33
	typePreviousGTIDs     = 35
	typeGTIDTagged        = 42
)

// eventTypeNames are the names SHOW BINLOG EVENTS prints (binlog_event.cpp,
// event_type_to_string).
var eventTypeNames = map[byte]string{
	typeQuery: "Query", typeStop: "Stop", typeRotate: "Rotate", typeFormatDescription: "Format_desc",
	typeXID: "Xid", typeTableMap: "Table_map", typeWriteRows: "Write_rows", typeDeleteRows: "Delete_rows",
	typeGTID: "Gtid", typePreviousGTIDs: "Previous_gtids", typeGTIDTagged: "Gtid_tagged_log_event",
}

const (
	headerLen   = 19 // LOG_EVENT_HEADER_LEN, binlog version 4
	checksumLen = 4  // BINLOG_CHECKSUM_LEN
	// flagInUse is LOG_EVENT_BINLOG_IN_USE_F: set in the format description
	// while the file is open, cleared when it is closed properly.
	flagInUse = 0x0001
	// stmtEndF marks the last rows event of a statement (rows_event.h STMT_END_F).
	stmtEndF = 0x0001
	// magic is the 4-byte header of every binary log file.
	magic = "\xfebin"
	// flagsOffset is where the header flags sit in an event.
	flagsOffset = 17
)

// postHeaderLengths is the post-header length of each event type 1..42 as
// the Format_description_event constructor of MySQL 8.4/9.x fills it for
// binlog version 4 (control_events.cpp, server_event_header_length; values
// from binlog_event.h enum_post_header_length). The entry for
// TRANSACTION_PAYLOAD_EVENT is the event type code 40 itself: MySQL writes
// that value there.
var postHeaderLengths = [42]byte{
	0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 99, 0, 4, 26, 8, 0, // 1..20
	0, 0, 0, 0, 0, 2, 0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40, // 21..40
	0, 0, // 41 HEARTBEAT_LOG_EVENT_V2, 42 GTID_TAGGED_LOG_EVENT
}

// event frames one event: the 19-byte common header, the body and the CRC32
// of both. pos is the end position written into the header (log_pos).
func event(typ byte, when uint32, serverID uint32, endPos uint32, flags uint16, body []byte) []byte {
	n := headerLen + len(body) + checksumLen
	b := make([]byte, n)
	binary.LittleEndian.PutUint32(b[0:], when)
	b[4] = typ
	binary.LittleEndian.PutUint32(b[5:], serverID)
	binary.LittleEndian.PutUint32(b[9:], uint32(n))
	binary.LittleEndian.PutUint32(b[13:], endPos)
	binary.LittleEndian.PutUint16(b[17:], flags)
	copy(b[headerLen:], body)
	sum := b[:n-checksumLen]
	if typ == typeFormatDescription && flags&flagInUse != 0 {
		// The format description's checksum is computed without the in-use
		// flag, so clearing the flag at close keeps it valid
		// (Log_event_footer::event_checksum_test).
		c := append([]byte(nil), sum...)
		c[flagsOffset] &^= flagInUse
		sum = c
	}
	binary.LittleEndian.PutUint32(b[n-checksumLen:], crc32.ChecksumIEEE(sum))
	return b
}

// eventLen is the size of an event with a body of n bytes.
func eventLen(n int) int { return headerLen + n + checksumLen }

// formatDescriptionBody is the body of FORMAT_DESCRIPTION_EVENT: binlog
// version 4, the 50-byte server version, the creation time, the common header
// length, the post-header lengths and the checksum algorithm (1 = CRC32).
func formatDescriptionBody(serverVersion string, created uint32) []byte {
	b := make([]byte, 2+50+4+1+len(postHeaderLengths)+1)
	binary.LittleEndian.PutUint16(b[0:], 4)
	copy(b[2:52], serverVersion)
	binary.LittleEndian.PutUint32(b[52:], created)
	b[56] = headerLen
	copy(b[57:], postHeaderLengths[:])
	b[len(b)-1] = 1
	return b
}

// rotateBody is the body of ROTATE_EVENT: the position in the next file and
// its name.
func rotateBody(next string) []byte {
	b := make([]byte, 8, 8+len(next))
	binary.LittleEndian.PutUint64(b, 4)
	return append(b, next...)
}

// xidBody is the body of XID_EVENT.
func xidBody(xid uint64) []byte {
	return binary.LittleEndian.AppendUint64(nil, xid)
}

// putLenenc appends a length-encoded integer (the client protocol's, which
// rows and table map events use).
func putLenenc(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xfe), v)
}

// readLenenc reads a length-encoded integer; n is 0 when b is too short.
func readLenenc(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch b[0] {
	case 0xfc:
		if len(b) < 3 {
			return 0, 0
		}
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3
	case 0xfd:
		if len(b) < 4 {
			return 0, 0
		}
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4
	case 0xfe:
		if len(b) < 9 {
			return 0, 0
		}
		return binary.LittleEndian.Uint64(b[1:]), 9
	}
	return uint64(b[0]), 1
}
