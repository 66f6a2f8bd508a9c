package mysqlsim

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/shipstream/bloodraven/pkg/testbed/mysqlsim/binlogfile"
)

// The receiver's side of MySQL's replication protocol: one client
// connection to the source (go-mysql's client for the handshake and
// authentication), the statements a MySQL 9.7 receiver sends before the dump
// (rpl_replica.cc: get_source_version_and_clock, get_source_uuid,
// io_thread_init_commands), COM_REGISTER_SLAVE and COM_BINLOG_DUMP_GTID,
// then events until the connection fails. Events go to the relay log as
// received and are decoded with binlogfile.

// Replication commands and flags (include/my_command.h, include/mysql.h).
const (
	comRegisterSlave    = 0x15
	comBinlogDumpGTID   = 0x1e
	binlogThroughGTID   = 0x04
	useHeartbeatEventV2 = 0x02
	erReplicaFatalError = 13117 // ER_REPLICA_FATAL_ERROR
	crServerLost        = 2013  // CR_SERVER_LOST
)

// errReceiverFatal is a receiver error that stops the thread instead of
// retrying (equal server ids or UUIDs, the source's 1236).
type errReceiverFatal struct {
	errno int
	msg   string
}

func (e *errReceiverFatal) Error() string { return e.msg }

// dialSource opens the receiver's connection: TLS when SOURCE_SSL=1 (the
// certificate verified only with SOURCE_SSL_VERIFY_SERVER_CERT=1), the
// program_name attribute partitions match on, and replica_net_timeout as
// the read timeout of every packet (the connection is dead after that long
// without an event or a heartbeat).
func (s *Server) dialSource(ctx context.Context, rc receiverConfig) (*client.Conn, error) {
	var tlsCfg *tls.Config
	if rc.ssl {
		var err error
		if tlsCfg, err = s.peerTLS(rc.host, rc.sslCA, rc.verify); err != nil { // transport.go
			return nil, err
		}
	}
	opts := []client.Option{func(c *client.Conn) error {
		c.ReadTimeout, c.WriteTimeout = rc.netTimeout, rc.netTimeout
		c.SetAttributes(map[string]string{"program_name": peerProgram(s.cfg.Name), "_client_role": "binary_log_listener",
			"_client_replication_channel_name": ""})
		if tlsCfg != nil {
			c.SetTLSConfig(tlsCfg)
		}
		return nil
	}}
	dctx, cancel := context.WithTimeout(ctx, rc.netTimeout)
	defer cancel()
	d := &net.Dialer{}
	var guard *publicKeyGuard
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(dctx, network, addr)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		if rc.ssl || rc.getPublicKey {
			return c, nil
		}
		guard = &publicKeyGuard{Conn: c}
		return guard, nil
	}
	conn, err := client.ConnectWithDialer(ctx, "tcp", rc.addr, rc.user, rc.password, "", dial, opts...)
	if guard != nil {
		guard.done.Store(true)
		if err != nil && guard.refused.Load() { // go-mysql reports any write error as a bad connection
			err = errPublicKeyNeeded
		}
	}
	return conn, err
}

// errPublicKeyNeeded is the receiver's answer to a source that wants
// caching_sha2_password's full authentication over a connection without
// TLS when GET_SOURCE_PUBLIC_KEY is not set: it may not ask for the RSA key
// (CR_AUTH_PLUGIN_ERR 2061, as libmysqlclient reports it).
var errPublicKeyNeeded = errors.New("public key retrieval is not allowed (GET_SOURCE_PUBLIC_KEY = 0)")

const (
	crAuthPluginErr    = 2061
	msgPublicKeyNeeded = "Authentication plugin 'caching_sha2_password' reported error: Authentication requires secure connection."
)

// publicKeyGuard refuses, during the handshake, the one packet go-mysql's
// client writes to ask for the server's RSA key (payload 0x02 inside the
// authentication exchange, so with a sequence number above 0), which a
// MySQL receiver sends only with GET_SOURCE_PUBLIC_KEY = 1.
type publicKeyGuard struct {
	net.Conn
	done, refused atomic.Bool
}

func (g *publicKeyGuard) Write(b []byte) (int, error) {
	if !g.done.Load() && len(b) == 5 && b[0] == 1 && b[1] == 0 && b[2] == 0 && b[3] != 0 && b[4] == 2 {
		g.refused.Store(true)
		return 0, errPublicKeyNeeded
	}
	return g.Conn.Write(b)
}

// sourceHello is what the receiver asks the source before the dump, with
// MySQL's checks: a source with this server's server_id or server_uuid is
// refused (13117), as rpl_replica.cc does without
// --replicate-same-server-id.
func (s *Server) sourceHello(conn *client.Conn, rc receiverConfig) (uuid string, id uint64, err error) {
	if _, err = conn.Execute("SELECT UNIX_TIMESTAMP()"); err != nil {
		return "", 0, err
	}
	r, err := conn.Execute("SELECT @@GLOBAL.SERVER_ID")
	if err != nil {
		return "", 0, err
	}
	id, _ = r.GetUint(0, 0)
	if uint32(id) == rc.ownServerID {
		return "", 0, &errReceiverFatal{erReplicaFatalError, "Fatal error: The replica I/O thread stops because source and replica have equal MySQL server ids; these ids must be different for replication to work (or the --replicate-same-server-id option must be used on replica but this does not always make sense; please check the manual before using it)."}
	}
	hb := strconv.FormatInt(int64(rc.heartbeat), 10)
	for _, q := range []string{
		"SET @source_heartbeat_period = " + hb,
		"SET @source_binlog_checksum = @@global.binlog_checksum",
		"SELECT @source_binlog_checksum",
		"SELECT @@GLOBAL.GTID_MODE",
	} {
		if r, err = conn.Execute(q); err != nil {
			return "", 0, err
		}
		if q == "SELECT @@GLOBAL.GTID_MODE" {
			if mode, _ := r.GetString(0, 0); mode != "ON" {
				return "", 0, &errReceiverFatal{erReplicaFatalError, "The replication receiver thread cannot start because the source has GTID_MODE = " + mode + " and this server has GTID_MODE = ON."}
			}
		}
	}
	if r, err = conn.Execute("SELECT @@GLOBAL.SERVER_UUID"); err != nil {
		return "", 0, err
	}
	uuid, _ = r.GetString(0, 0)
	if strings.EqualFold(uuid, rc.ownUUID) {
		return "", 0, &errReceiverFatal{erReplicaFatalError, "Fatal error: The replica I/O thread stops because source and replica have equal MySQL server UUIDs; these UUIDs must be different for replication to work."}
	}
	if _, err = conn.Execute("SET @replica_uuid = '" + rc.ownUUID + "'"); err != nil {
		return "", 0, err
	}
	return uuid, id, nil
}

// registerAndDump sends COM_REGISTER_SLAVE (server_id, report_host,
// report_user, report_password, report_port, rank, source id) and
// COM_BINLOG_DUMP_GTID (flags, server_id, no file name, position 4, the
// GTID set in the Previous_gtids encoding, MySQL 8.3+'s tagged one when
// the set has tags).
func registerAndDump(conn *client.Conn, rc receiverConfig) error {
	reg := []byte{comRegisterSlave}
	reg = binary.LittleEndian.AppendUint32(reg, rc.ownServerID)
	reg = append(reg, 0, 0, 0) // report_host, report_user, report_password: none
	reg = binary.LittleEndian.AppendUint16(reg, 0)
	reg = binary.LittleEndian.AppendUint32(reg, 0) // rank
	reg = binary.LittleEndian.AppendUint32(reg, 0) // source id (filled by the source)
	conn.ResetSequence()
	if err := conn.WritePacket(withHeader(reg)); err != nil {
		return err
	}
	if _, err := conn.ReadOKPacket(); err != nil {
		return err
	}
	set := binlogfile.EncodeGTIDSet(rc.have)
	dump := []byte{comBinlogDumpGTID}
	dump = binary.LittleEndian.AppendUint16(dump, binlogThroughGTID|useHeartbeatEventV2)
	dump = binary.LittleEndian.AppendUint32(dump, rc.ownServerID)
	dump = binary.LittleEndian.AppendUint32(dump, 0) // binlog name length
	dump = binary.LittleEndian.AppendUint64(dump, 4) // position
	dump = binary.LittleEndian.AppendUint32(dump, uint32(len(set)))
	dump = append(dump, set...)
	conn.ResetSequence()
	return conn.WritePacket(withHeader(dump))
}

// withHeader leaves room for the packet header go-mysql's WritePacket fills.
func withHeader(payload []byte) []byte { return append(make([]byte, 4), payload...) }

// readEvent reads the next event of the dump: an OK marker byte and the
// event, an ERR packet (the source's error), or EOF (the dump ended).
func readEvent(conn *client.Conn) ([]byte, error) {
	data, err := conn.ReadPacket()
	if err != nil {
		return nil, err
	}
	switch {
	case len(data) == 0:
		return nil, errors.New("empty packet from source")
	case data[0] == gomysql.OK_HEADER:
		return data[1:], nil
	case data[0] == gomysql.ERR_HEADER:
		return nil, conn.HandleErrorPacket(data)
	case data[0] == gomysql.EOF_HEADER && len(data) < 9:
		return nil, errors.New("the source ended the binlog dump")
	}
	return nil, fmt.Errorf("unexpected packet 0x%02x from source", data[0])
}

// receiverErrno maps a connection error to what Last_IO_Errno and
// Last_IO_Error show: the server's error (1045, ...), 2003 when the source
// cannot be reached, 2013 when the connection was lost or timed out.
func receiverErrno(err error) (int, string) {
	var me *gomysql.MyError
	if errors.As(err, &me) {
		return int(me.Code), me.Message
	}
	if errors.Is(err, errPublicKeyNeeded) {
		return crAuthPluginErr, msgPublicKeyNeeded
	}
	if n, msg, ok := tlsClientErrno(err); ok { // transport.go
		return n, msg
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return CrConnHostError, "Can't connect to MySQL server: " + oe.Err.Error()
	}
	return crServerLost, "Lost connection to MySQL server during query: " + rootCause(err).Error()
}

// rootCause unwraps go-mysql's traced errors for messages.
func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
