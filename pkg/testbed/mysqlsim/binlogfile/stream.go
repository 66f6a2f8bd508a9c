package binlogfile

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Receiving a replication stream (the replica's side; dumpread.go is the
// source's).

// TypePrevGTIDs is PREVIOUS_GTIDS_LOG_EVENT.
const TypePrevGTIDs = typePreviousGTIDs

// StreamEvent is one event of a COM_BINLOG_DUMP_GTID stream as a receiver
// sees it.
type StreamEvent struct {
	Type     byte
	ServerID uint32
	// LogPos is the end position of the event in the source's file; 0 for
	// artificial events.
	LogPos uint32
	Flags  uint16
	// RotateFile and RotatePos: the file and position a rotate event names.
	RotateFile string
	RotatePos  uint64
	// HeartbeatFile is the source's current file a version 1 heartbeat names.
	HeartbeatFile string
	// Txn is set on the event that ends a transaction.
	Txn *Located
}

// Decoder groups a stream's events into transactions as the file reader
// does. A Decoder is not safe for concurrent use.
type Decoder struct {
	fc FileContents
	r  *reader
}

// NewDecoder starts decoding a stream.
func NewDecoder() *Decoder {
	d := &Decoder{}
	d.r = &reader{fc: &d.fc, tables: map[uint64]tableRef{}}
	return d
}

// Feed decodes one event (header, body and CRC32 checksum). start is where
// the event will lie in the file it is written to, which the returned
// transaction's Start and End count in.
func (d *Decoder) Feed(ev []byte, start int64) (StreamEvent, error) {
	if len(ev) < headerLen+checksumLen || int(binary.LittleEndian.Uint32(ev[9:])) != len(ev) {
		return StreamEvent{}, errors.New("binlogfile: malformed event")
	}
	if err := checkCRC(ev); err != nil {
		return StreamEvent{}, fmt.Errorf("binlogfile: event type %d: %w", ev[4], err)
	}
	se := StreamEvent{Type: ev[4], ServerID: binary.LittleEndian.Uint32(ev[5:]),
		LogPos: binary.LittleEndian.Uint32(ev[13:]), Flags: binary.LittleEndian.Uint16(ev[flagsOffset:])}
	body := ev[headerLen : len(ev)-checksumLen]
	switch se.Type {
	case typeRotate:
		if len(body) < 8 {
			return se, errors.New("binlogfile: short rotate event")
		}
		se.RotatePos, se.RotateFile = binary.LittleEndian.Uint64(body), string(body[8:])
		return se, nil // a rotate is no part of a transaction
	case TypeHeartbeat:
		se.HeartbeatFile = string(body)
		return se, nil
	case TypeHeartbeatV2:
		return se, nil // its fields are not needed: the count and time are
	}
	n := len(d.fc.Txns)
	if err := d.r.event(ev, start); err != nil {
		return se, err
	}
	d.fc.Events = d.fc.Events[:0]
	if len(d.fc.Txns) > n {
		t := d.fc.Txns[len(d.fc.Txns)-1]
		se.Txn = &t
		d.fc.Txns = d.fc.Txns[:0]
	}
	return se, nil
}

// Pending is the transaction being received: its GTID event was decoded,
// its end not yet.
func (d *Decoder) Pending() (Located, bool) {
	if d.r.cur == nil {
		return Located{}, false
	}
	return *d.r.cur, true
}

// Drop forgets a partially received transaction (the connection was lost;
// the source sends it again whole).
func (d *Decoder) Drop() { d.r.cur, d.r.began, d.r.openStmt = nil, false, false }
