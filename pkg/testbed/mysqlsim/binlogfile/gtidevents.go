package binlogfile

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
	"strings"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// gtidInfo is what a GTID event carries.
type gtidInfo struct {
	gtid                            gtid.GTID
	flags                           byte // 1 = FLAG_MAY_HAVE_SBR (the transaction has statements)
	lastCommitted, sequenceNumber   int64
	immediateCommit, originalCommit uint64 // microseconds since the epoch
	transactionLength               uint64
	immediateVersion, originalVer   uint32
}

// serverVersionNumber turns "9.7.0" into 90700 as MySQL's
// do_server_version_split and version_product do.
func serverVersionNumber(v string) uint32 {
	var parts [3]uint32
	i := 0
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9' && i < 3:
			parts[i] = parts[i]*10 + uint32(c-'0')
		case c == '.' && i < 2:
			i++
		default:
			i = 3
		}
	}
	return parts[0]*10000 + parts[1]*100 + parts[2]
}

func uuidBytes(u string) ([16]byte, error) {
	var out [16]byte
	raw, err := hex.DecodeString(strings.ReplaceAll(u, "-", ""))
	if err != nil || len(raw) != 16 {
		return out, fmt.Errorf("binlogfile: bad uuid %q", u)
	}
	copy(out[:], raw)
	return out, nil
}

func uuidString(b []byte) string {
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// untaggedGTIDBody is the body of GTID_LOG_EVENT as MySQL 8.0.14+ writes it
// (Gtid_event layout in control_events.cpp): flags, SID, GNO, logical clock
// type 2, last_committed, sequence_number, the immediate commit timestamp
// with bit 55 set when the original one follows, the transaction length as
// a packed integer, and the immediate server version with bit 31 set when
// the original one follows.
func untaggedGTIDBody(g gtidInfo) []byte {
	u, _ := uuidBytes(g.gtid.UUID)
	b := make([]byte, 0, 64)
	b = append(b, g.flags)
	b = append(b, u[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(g.gtid.GNO))
	b = append(b, 2)
	b = binary.LittleEndian.AppendUint64(b, uint64(g.lastCommitted))
	b = binary.LittleEndian.AppendUint64(b, uint64(g.sequenceNumber))
	ts := g.immediateCommit
	if g.originalCommit != g.immediateCommit {
		ts |= 1 << 55
	}
	b = append(b, le7(ts)...)
	if g.originalCommit != g.immediateCommit {
		b = append(b, le7(g.originalCommit)...)
	}
	b = putLenenc(b, g.transactionLength)
	v := g.immediateVersion
	if g.originalVer != g.immediateVersion {
		v |= 1 << 31
	}
	b = binary.LittleEndian.AppendUint32(b, v)
	if g.originalVer != g.immediateVersion {
		b = binary.LittleEndian.AppendUint32(b, g.originalVer)
	}
	return b
}

func le7(v uint64) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return b[:7]
}

func readLE7(b []byte) uint64 {
	var x [8]byte
	copy(x[:], b[:7])
	return binary.LittleEndian.Uint64(x[:])
}

func decodeUntaggedGTID(b []byte) (gtidInfo, error) {
	var g gtidInfo
	if len(b) < 42+7 {
		return g, errors.New("binlogfile: GTID event too short")
	}
	g.flags = b[0]
	g.gtid.UUID = uuidString(b[1:17])
	g.gtid.GNO = int64(binary.LittleEndian.Uint64(b[17:]))
	if b[25] != 2 {
		return g, errors.New("binlogfile: GTID event: unknown logical clock type")
	}
	g.lastCommitted = int64(binary.LittleEndian.Uint64(b[26:]))
	g.sequenceNumber = int64(binary.LittleEndian.Uint64(b[34:]))
	p := 42
	g.immediateCommit = readLE7(b[p:])
	p += 7
	g.originalCommit = g.immediateCommit
	if g.immediateCommit&(1<<55) != 0 {
		g.immediateCommit &^= 1 << 55
		if len(b) < p+7 {
			return g, errors.New("binlogfile: GTID event too short")
		}
		g.originalCommit = readLE7(b[p:])
		p += 7
	}
	v, n := readLenenc(b[p:])
	if n == 0 || len(b) < p+n+4 {
		return g, errors.New("binlogfile: GTID event too short")
	}
	g.transactionLength = v
	p += n
	g.immediateVersion = binary.LittleEndian.Uint32(b[p:])
	g.originalVer = g.immediateVersion
	if g.immediateVersion&(1<<31) != 0 {
		g.immediateVersion &^= 1 << 31
		if len(b) < p+8 {
			return g, errors.New("binlogfile: GTID event too short")
		}
		g.originalVer = binary.LittleEndian.Uint32(b[p+4:])
	}
	return g, nil
}

// The tagged GTID event (GTID_TAGGED_LOG_EVENT) is a mysql::serialization
// message (libs/mysql/serialization, readme.md): the format version 1 as the
// message's field id, the message size in bytes (all of it), the last
// non-ignorable field id (0: every Gtid_event field is ignorable), then each
// encoded field as its id and value. Fields of Gtid_event::define_fields, in
// order: 0 gtid_flags, 1 uuid (16 bytes, each a varlen integer), 2 gno, 3
// tag, 4 last_committed, 5 sequence_number, 6 immediate_commit_timestamp,
// 7 original_commit_timestamp (only when different), 8 transaction_length,
// 9 immediate_server_version, 10 original_server_version (only when
// different), 11 commit_group_ticket (not written).

// putVarUint appends an unsigned varlen integer: the count of trailing one
// bits in the first byte is the number of extra bytes; 9 bytes hold 64 bits.
func putVarUint(b []byte, v uint64) []byte {
	n := (bits.Len64(v) + 6) / 7
	if n == 0 {
		n = 1
	}
	if n >= 9 {
		return binary.LittleEndian.AppendUint64(append(b, 0xff), v)
	}
	enc := v<<n | (1<<(n-1) - 1)
	var x [8]byte
	binary.LittleEndian.PutUint64(x[:], enc)
	return append(b, x[:n]...)
}

// putVarInt appends a signed varlen integer (sign in the lowest value bit).
func putVarInt(b []byte, v int64) []byte {
	if v >= 0 {
		return putVarUint(b, uint64(v)<<1)
	}
	return putVarUint(b, uint64(-(v+1))<<1|1)
}

func readVarUint(b []byte) (uint64, int, error) {
	if len(b) == 0 {
		return 0, 0, errors.New("binlogfile: varlen integer truncated")
	}
	n := bits.TrailingZeros8(^b[0]) + 1
	if len(b) < n {
		return 0, 0, errors.New("binlogfile: varlen integer truncated")
	}
	if n == 9 {
		return binary.LittleEndian.Uint64(b[1:]), 9, nil
	}
	var x [8]byte
	copy(x[:], b[:n])
	return binary.LittleEndian.Uint64(x[:]) >> n, n, nil
}

func readVarInt(b []byte) (int64, int, error) {
	u, n, err := readVarUint(b)
	if u&1 == 0 {
		return int64(u >> 1), n, err
	}
	return -int64(u>>1) - 1, n, err
}

// taggedFields encodes the fields of a tagged GTID event (without the
// message header).
func taggedFields(g gtidInfo) []byte {
	u, _ := uuidBytes(g.gtid.UUID)
	var b []byte
	b = append(putVarUint(b, 0), putVarUint(nil, uint64(g.flags))...)
	b = putVarUint(b, 1)
	for _, c := range u {
		b = putVarUint(b, uint64(c))
	}
	b = putVarInt(putVarUint(b, 2), g.gtid.GNO)
	b = putVarUint(putVarUint(b, 3), uint64(len(g.gtid.Tag)))
	b = append(b, g.gtid.Tag...)
	b = putVarInt(putVarUint(b, 4), g.lastCommitted)
	b = putVarInt(putVarUint(b, 5), g.sequenceNumber)
	b = putVarUint(putVarUint(b, 6), g.immediateCommit)
	if g.originalCommit != g.immediateCommit {
		b = putVarUint(putVarUint(b, 7), g.originalCommit)
	}
	b = putVarUint(putVarUint(b, 8), g.transactionLength)
	b = putVarUint(putVarUint(b, 9), uint64(g.immediateVersion))
	if g.originalVer != g.immediateVersion {
		b = putVarUint(putVarUint(b, 10), uint64(g.originalVer))
	}
	return b
}

// taggedGTIDBody wraps the fields in the message header; the size counts the
// whole message, its own bytes included (get_size_serializable).
func taggedGTIDBody(g gtidInfo) []byte {
	fields := taggedFields(g)
	head := []byte{0x02} // field id: serialization_format_version 1
	lastNonIgnorable := putVarUint(nil, 0)
	payload := uint64(len(head) + len(lastNonIgnorable) + len(fields))
	size := payload + 1
	for payload+uint64(len(putVarUint(nil, size))) != size {
		size = payload + uint64(len(putVarUint(nil, size)))
	}
	b := append(head, putVarUint(nil, size)...)
	b = append(b, lastNonIgnorable...)
	return append(b, fields...)
}

func decodeTaggedGTID(b []byte) (gtidInfo, error) {
	var g gtidInfo
	p := 0
	next := func() uint64 {
		v, n, err := readVarUint(b[p:])
		if err != nil {
			panic(err)
		}
		p += n
		return v
	}
	nextInt := func() int64 {
		v, n, err := readVarInt(b[p:])
		if err != nil {
			panic(err)
		}
		p += n
		return v
	}
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("binlogfile: tagged GTID event: %v", r)
			}
		}()
		next() // format version
		size := next()
		next() // last non-ignorable field id
		if size > uint64(len(b)) {
			panic("message longer than the event")
		}
		end := int(size)
		origCommit, origVer := false, false
		for p < end {
			switch id := next(); id {
			case 0:
				g.flags = byte(next())
			case 1:
				var u [16]byte
				for i := range u {
					u[i] = byte(next())
				}
				g.gtid.UUID = uuidString(u[:])
			case 2:
				g.gtid.GNO = nextInt()
			case 3:
				l := int(next())
				g.gtid.Tag = string(b[p : p+l])
				p += l
			case 4:
				g.lastCommitted = nextInt()
			case 5:
				g.sequenceNumber = nextInt()
			case 6:
				g.immediateCommit = next()
			case 7:
				g.originalCommit, origCommit = next(), true
			case 8:
				g.transactionLength = next()
			case 9:
				g.immediateVersion = uint32(next())
			case 10:
				g.originalVer, origVer = uint32(next()), true
			case 11:
				next()
			default:
				panic(fmt.Sprintf("unknown field %d", id))
			}
		}
		if !origCommit {
			g.originalCommit = g.immediateCommit
		}
		if !origVer {
			g.originalVer = g.immediateVersion
		}
	}()
	return g, err
}

// previousGTIDsBody encodes a GTID set as Gtid_set::encode does: the classic
// format (count, then per source the UUID, the interval count and the
// intervals as [start, end+1)) when no GTID is tagged; otherwise the tagged
// format, whose header is (1<<56)|(count<<8)|1 (rpl_gtid_set.cc,
// encode_nsids_format) and whose entries carry the tag after the UUID.
func previousGTIDsBody(s gtid.Set) []byte {
	sids := s.SIDs()
	tagged := false
	for _, sid := range sids {
		tagged = tagged || sid.Tag != ""
	}
	head := uint64(len(sids))
	if tagged {
		head = 1<<56 | uint64(len(sids))<<8 | 1
	}
	b := binary.LittleEndian.AppendUint64(nil, head)
	for _, sid := range sids {
		u, _ := uuidBytes(sid.UUID)
		b = append(b, u[:]...)
		if tagged {
			b = append(b, byte(len(sid.Tag)<<1))
			b = append(b, sid.Tag...)
		}
		ivs := s.Intervals(sid)
		b = binary.LittleEndian.AppendUint64(b, uint64(len(ivs)))
		for _, iv := range ivs {
			b = binary.LittleEndian.AppendUint64(b, uint64(iv.Start))
			b = binary.LittleEndian.AppendUint64(b, uint64(iv.End+1))
		}
	}
	return b
}

func decodePreviousGTIDs(b []byte) (gtid.Set, error) {
	bad := errors.New("binlogfile: malformed Previous_gtids event")
	if len(b) < 8 {
		return gtid.Set{}, bad
	}
	head := binary.LittleEndian.Uint64(b)
	tagged := head>>56 == 1
	n := head
	if tagged {
		n = (head >> 8) & (1<<48 - 1)
	}
	var parts []string
	p := 8
	for i := uint64(0); i < n; i++ {
		if len(b) < p+16 {
			return gtid.Set{}, bad
		}
		sid := uuidString(b[p : p+16])
		p += 16
		if tagged {
			if len(b) < p+1 {
				return gtid.Set{}, bad
			}
			l := int(b[p] >> 1)
			p++
			if len(b) < p+l {
				return gtid.Set{}, bad
			}
			if l > 0 {
				sid += ":" + string(b[p:p+l])
			}
			p += l
		}
		if len(b) < p+8 {
			return gtid.Set{}, bad
		}
		k := binary.LittleEndian.Uint64(b[p:])
		p += 8
		if k > uint64(len(b)-p)/16 {
			return gtid.Set{}, bad
		}
		for j := uint64(0); j < k; j++ {
			start := binary.LittleEndian.Uint64(b[p:])
			end := binary.LittleEndian.Uint64(b[p+8:])
			p += 16
			parts = append(parts, fmt.Sprintf("%s:%d-%d", sid, start, end-1))
		}
	}
	return gtid.Parse(strings.Join(parts, ","))
}
