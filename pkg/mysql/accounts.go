package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// Account statements. Their text is built by pkg/accounts, the one place
// that knows the roles' grants (the first-boot init script runs the same
// text); the catalog declares their shape, and ExecAccount sends only text
// of a declared shape. Each carries a password or an account name and is
// never logged.
var (
	// StmtCreateUser creates a role's account that the active site lacks.
	StmtCreateUser = Statement{
		Name:    "create-user",
		SQL:     "CREATE USER {user}@'%' IDENTIFIED BY {password}",
		Purpose: "Converge accounts: create on the active site (it replicates) a role's account added after first boot.",
	}
	// StmtGrant grants a role's privileges on one level.
	StmtGrant = Statement{
		Name:    "grant",
		SQL:     "GRANT {privileges} ON {level} TO {user}@'%'",
		Purpose: "Converge accounts: give a new account its role's grants, or restore grants that drifted.",
	}
	// StmtRevoke revokes privileges (or a role) the account's role does not hold.
	StmtRevoke = Statement{
		Name:    "revoke",
		SQL:     "REVOKE {privileges} ON {level} FROM {user}@'%'",
		Purpose: "Converge accounts: take back privileges granted by hand beyond the account's role.",
	}
	// StmtAlterUserRetain changes a password keeping the old one valid.
	StmtAlterUserRetain = Statement{
		Name:    "alter-user-retain",
		SQL:     "ALTER USER {user}@'%' IDENTIFIED BY {password} RETAIN CURRENT PASSWORD",
		Purpose: "Rotate a password: the new one becomes primary, the old one stays valid as secondary until discarded.",
	}
	// StmtDiscardOldPassword ends a rotation's overlap.
	StmtDiscardOldPassword = Statement{
		Name:    "discard-old-password",
		SQL:     "ALTER USER {user}@'%' DISCARD OLD PASSWORD",
		Purpose: "End a rotation: the retained old password stops authenticating.",
	}
	// StmtShowGrants reads an account's grants (error 1141 when it does not exist).
	StmtShowGrants = Statement{
		Name:    "show-grants",
		SQL:     "SHOW GRANTS FOR {user}@'%'",
		Purpose: "Converge accounts: whether a role's account exists and which grants it holds.",
	}
	// StmtAuthenticationString reads the accounts' password hashes.
	StmtAuthenticationString = Statement{
		Name:    "authentication-string",
		SQL:     "SELECT User, Host, authentication_string FROM mysql.user",
		Purpose: "Rotate a password: after a restart between recording a rotation and its ALTER, whether the ALTER was applied (the hash changed).",
	}
	// StmtChangeSourcePassword changes only the channel's password; MySQL
	// accepts it only with the receiver stopped (the applier may run).
	StmtChangeSourcePassword = Statement{
		Name:             "change-source-password",
		SQL:              "CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD = {password}",
		Purpose:          "Rotate the replication password: move a replica's channel to the new one while both are valid.",
		NeedsReplication: true,
	}
	// StmtStartReplicaIOThread restarts the receiver after a password change.
	StmtStartReplicaIOThread = Statement{
		Name:             "start-replica-io-thread",
		SQL:              "START REPLICA IO_THREAD",
		Purpose:          "Rotate the replication password: restart the receiver stopped for the change.",
		NeedsReplication: true,
	}
)

// accountStatements are the statements ExecAccount sends.
var accountStatements = []Statement{StmtCreateUser, StmtGrant, StmtRevoke, StmtAlterUserRetain, StmtDiscardOldPassword}

// AccountCatalog lists the account statements of the catalog.
func AccountCatalog() []Statement {
	return append(append([]Statement(nil), accountStatements...), StmtShowGrants, StmtAuthenticationString,
		StmtChangeSourcePassword, StmtStartReplicaIOThread)
}

// prefix is a statement's fixed text before its first slot.
func (s Statement) prefix() string {
	if i := strings.IndexByte(s.SQL, '{'); i >= 0 {
		return s.SQL[:i]
	}
	return s.SQL
}

// ExecAccount sends one account statement text built by pkg/accounts; it
// refuses text whose shape is not the declared stmt's. Errors never carry
// the text (it may hold a password).
func (c *Client) ExecAccount(ctx context.Context, stmt Statement, text string) error {
	ok := false
	for _, s := range accountStatements {
		ok = ok || s.Name == stmt.Name
	}
	if !ok || !strings.HasPrefix(text, stmt.prefix()) {
		return c.wrap(stmt, errors.New("not a statement of this shape"))
	}
	return redactSyntax(c.exec(ctx, stmt, text))
}

// redactSyntax drops the message of a syntax error (1064, 1149), which
// quotes the statement near the error and so could quote a password.
func redactSyntax(err error) error {
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) && (me.Number == 1064 || me.Number == 1149) {
		return fmt.Errorf("mysql account statement: syntax error %d (message withheld: it quotes the statement)", me.Number)
	}
	return err
}

// ErrNoSuchAccount: SHOW GRANTS found no account of that name.
var ErrNoSuchAccount = errors.New("no such account")

// ShowGrants returns SHOW GRANTS FOR user@'%' one row a line, or
// ErrNoSuchAccount (MySQL error 1141) when there is no such account.
func (c *Client) ShowGrants(ctx context.Context, user string) ([]string, error) {
	text, err := StmtShowGrants.Render(map[string]any{"user": Str(user)})
	if err != nil {
		return nil, c.wrap(StmtShowGrants, err)
	}
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	rows, err := c.db.QueryContext(ctx, text)
	var me *mysqldriver.MySQLError
	if errors.As(err, &me) && me.Number == 1141 {
		return nil, ErrNoSuchAccount
	}
	if err != nil {
		return nil, c.wrap(StmtShowGrants, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return nil, c.wrap(StmtShowGrants, err)
		}
		out = append(out, l)
	}
	return out, c.wrap(StmtShowGrants, rows.Err())
}

// AuthFingerprint is a SHA-256 fingerprint of the account user@'%':
// its mysql.user.authentication_string changes with every ALTER USER ...
// IDENTIFIED BY (a new salt), and reveals nothing of the hash it stands for.
func (c *Client) AuthFingerprint(ctx context.Context, user string) (string, error) {
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	rows, err := c.db.QueryContext(ctx, StmtAuthenticationString.SQL)
	if err != nil {
		return "", c.wrap(StmtAuthenticationString, err)
	}
	defer rows.Close()
	// Every account's row, filtered here: a handful of accounts, and the
	// statement stays one the simulator models without a WHERE.
	for rows.Next() {
		var u, h, v sql.NullString
		if err := rows.Scan(&u, &h, &v); err != nil {
			return "", c.wrap(StmtAuthenticationString, err)
		}
		if u.String == user && h.String == "%" {
			sum := sha256.Sum256([]byte(v.String))
			return hex.EncodeToString(sum[:]), nil
		}
	}
	if err := rows.Err(); err != nil {
		return "", c.wrap(StmtAuthenticationString, err)
	}
	return "", c.wrap(StmtAuthenticationString, ErrNoSuchAccount)
}

// ChangeSourcePassword moves the replication channel to password: the
// receiver is stopped (MySQL refuses SOURCE_PASSWORD while it runs), the
// password changed, and the receiver started again only if it ran before.
// The applier keeps applying throughout.
func (c *Client) ChangeSourcePassword(ctx context.Context, password string, receiverRan bool) error {
	if err := c.StopReplicaIOThread(ctx); err != nil {
		return err
	}
	text, err := StmtChangeSourcePassword.Render(map[string]any{"password": Str(password)})
	if err != nil {
		return c.wrap(StmtChangeSourcePassword, err)
	}
	if err := redactSyntax(c.exec(ctx, StmtChangeSourcePassword, text)); err != nil {
		if receiverRan {
			_ = c.exec(ctx, StmtStartReplicaIOThread, StmtStartReplicaIOThread.SQL)
		}
		return err
	}
	if !receiverRan {
		return nil
	}
	return c.exec(ctx, StmtStartReplicaIOThread, StmtStartReplicaIOThread.SQL)
}

// applyPasswordSource makes every new connection of cfg ask src for its
// password (the driver's BeforeConnect hook).
func applyPasswordSource(cfg *mysqldriver.Config, src func() string) {
	if src == nil {
		return
	}
	_ = cfg.Apply(mysqldriver.BeforeConnect(func(_ context.Context, c *mysqldriver.Config) error {
		if pw := src(); pw != "" {
			c.Passwd = pw
		}
		return nil
	}))
}
