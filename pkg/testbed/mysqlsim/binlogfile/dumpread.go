package binlogfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// What a binlog dump thread needs from the files (the simulator's dump.go):
// the raw events of a file from a position, as far as the file set has
// written them (the current file's buffered appends included, as MySQL's
// sender reads up to the binary log's end position, which a commit moves
// after writing to the file), the file after a given one, each file's
// Previous_gtids, and the few event fields a sender looks at.

// ErrPurged is returned for a file the index no longer lists.
var ErrPurged = errors.New("binlogfile: file not in the binlog index")

// Event types a dump thread writes or inspects.
const (
	TypeRotate            = typeRotate
	TypeFormatDescription = typeFormatDescription
	TypeGTID              = typeGTID
	TypeGTIDTagged        = typeGTIDTagged
	TypeStop              = typeStop
	TypeHeartbeat         = 27 // HEARTBEAT_LOG_EVENT
	TypeHeartbeatV2       = 41 // HEARTBEAT_LOG_EVENT_V2
	HeaderLen             = headerLen
	ChecksumLen           = checksumLen
	// FlagArtificial is LOG_EVENT_ARTIFICIAL_F, set on events a sender
	// makes up (the rotate event that starts each file's stream).
	FlagArtificial = 0x0020
)

// ReadEvents returns whole events of file name from offset pos on, at most
// about max bytes (at least one event), and whether name is the file being
// written. A name the index does not list gives ErrPurged.
func (fs *FileSet) ReadEvents(name string, pos int64, max int) ([]byte, bool, error) {
	if !fs.Has(name) {
		return nil, false, ErrPurged
	}
	cur, _ := fs.Current()
	current := name == cur && !fs.closed
	var data []byte
	var err error
	if current && fs.cur != nil {
		data, err = readAt(fs.cur, pos, fs.size)
		if err == nil && pos+int64(len(data)) >= fs.size {
			from := max64(0, pos-fs.size)
			if from < int64(len(fs.buf)) {
				data = append(data, fs.buf[from:]...)
			}
		}
	} else {
		var f *os.File
		if f, err = os.Open(fs.path(name)); err == nil {
			st, serr := f.Stat()
			if serr != nil {
				err = serr
			} else {
				data, err = readAt(f, pos, st.Size())
			}
			f.Close()
		}
	}
	if err != nil {
		return nil, current, err
	}
	return wholeEvents(data, max), current, nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func readAt(f *os.File, pos, end int64) ([]byte, error) {
	if pos >= end {
		return nil, nil
	}
	b := make([]byte, end-pos)
	n, err := f.ReadAt(b, pos)
	if err == io.EOF {
		err = nil
	}
	return b[:n], err
}

// wholeEvents cuts data after the last complete event that fits in max
// bytes (always keeping the first complete event).
func wholeEvents(data []byte, max int) []byte {
	p := 0
	for p+headerLen <= len(data) {
		size := int(binary.LittleEndian.Uint32(data[p+9:]))
		if size < headerLen || p+size > len(data) || (p > 0 && p+size > max) {
			break
		}
		p += size
	}
	return data[:p]
}

// NextFile is the file after name in the index; false when name is the
// last (or not listed).
func (fs *FileSet) NextFile(name string) (string, bool) {
	for i, n := range fs.names {
		if n == name && i+1 < len(fs.names) {
			return fs.names[i+1], true
		}
	}
	return "", false
}

// Names lists the files in index order.
func (fs *FileSet) Names() []string { return append([]string(nil), fs.names...) }

// FilePrevious reads the Previous_gtids of one file (the event after its
// format description).
func (fs *FileSet) FilePrevious(name string) (gtid.Set, error) {
	if err := fs.Flush(); err != nil {
		return gtid.Set{}, err
	}
	f, err := os.Open(fs.path(name))
	if err != nil {
		return gtid.Set{}, err
	}
	defer f.Close()
	pos := int64(4)
	for i := 0; i < 2; i++ {
		var h [headerLen]byte
		if _, err := f.ReadAt(h[:], pos); err != nil {
			return gtid.Set{}, fmt.Errorf("binlogfile: %s: %w", name, err)
		}
		size := int64(binary.LittleEndian.Uint32(h[9:]))
		if h[4] == typePreviousGTIDs {
			body := make([]byte, size-headerLen-checksumLen)
			if _, err := f.ReadAt(body, pos+headerLen); err != nil {
				return gtid.Set{}, err
			}
			return decodePreviousGTIDs(body)
		}
		pos += size
	}
	return gtid.Set{}, fmt.Errorf("binlogfile: %s has no Previous_gtids event", name)
}

// EventGTID decodes the GTID of a GTID event (type 33 or 42), given the
// whole event with its header and checksum.
func EventGTID(ev []byte) (gtid.GTID, error) {
	if len(ev) < headerLen+checksumLen {
		return gtid.GTID{}, errors.New("binlogfile: short event")
	}
	body := ev[headerLen : len(ev)-checksumLen]
	decode := decodeUntaggedGTID
	if ev[4] == typeGTIDTagged {
		decode = decodeTaggedGTID
	}
	g, err := decode(body)
	return g.gtid, err
}

// DecodeGTIDSet reads a GTID set in Gtid_set::encode's format (classic or
// tagged), as COM_BINLOG_DUMP_GTID carries it.
func DecodeGTIDSet(b []byte) (gtid.Set, error) { return decodePreviousGTIDs(b) }

// EncodeGTIDSet writes a GTID set as Gtid_set::encode does.
func EncodeGTIDSet(s gtid.Set) []byte { return previousGTIDsBody(s) }

// Event frames one event with the common header and a CRC32 checksum when
// checksum is set (artificial events a sender makes up: rotate, heartbeat).
func Event(typ byte, serverID, endPos uint32, flags uint16, body []byte, checksum bool) []byte {
	if checksum {
		return event(typ, 0, serverID, endPos, flags, body)
	}
	b := make([]byte, headerLen+len(body))
	b[4] = typ
	binary.LittleEndian.PutUint32(b[5:], serverID)
	binary.LittleEndian.PutUint32(b[9:], uint32(len(b)))
	binary.LittleEndian.PutUint32(b[13:], endPos)
	binary.LittleEndian.PutUint16(b[17:], flags)
	copy(b[headerLen:], body)
	return b
}

// RotateBody is a rotate event's body naming file at position pos.
func RotateBody(file string, pos uint64) []byte {
	b := binary.LittleEndian.AppendUint64(nil, pos)
	return append(b, file...)
}

// HeartbeatV2Body is HEARTBEAT_LOG_EVENT_V2's body: the file name and the
// position as type-length-value fields, then the end mark
// (mysql::binlog::event codecs, Heartbeat fields 1, 2 and 0).
func HeartbeatV2Body(file string, pos uint64) []byte {
	b := []byte{1, byte(len(file))}
	b = append(b, file...)
	p := putLenenc(nil, pos)
	b = append(b, 2, byte(len(p)))
	b = append(b, p...)
	return append(b, 0)
}

// ClearFormatDescription prepares a file's format description for sending
// as MySQL's sender does: the in-use flag cleared and, when the sender
// skips part of the file, log_pos and the creation time zeroed, with the
// checksum recomputed.
func ClearFormatDescription(ev []byte, clearPos bool) []byte {
	ev = append([]byte(nil), ev...)
	binary.LittleEndian.PutUint16(ev[flagsOffset:], binary.LittleEndian.Uint16(ev[flagsOffset:])&^flagInUse)
	if clearPos {
		binary.LittleEndian.PutUint32(ev[13:], 0)
		binary.LittleEndian.PutUint32(ev[headerLen+52:], 0)
	}
	n := len(ev)
	binary.LittleEndian.PutUint32(ev[n-checksumLen:], crc32.ChecksumIEEE(ev[:n-checksumLen]))
	return ev
}
