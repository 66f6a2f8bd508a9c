package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Schema statements (MysqlDatabase, docs/api.md): create a schema with its
// character set and collation, read them back as the server reports them,
// drop a schema and a schema owner. Schema and account names travel as
// quoted identifiers and literals, never as free text. The owner's CREATE
// USER and GRANT are account statements (accounts.go, built by
// pkg/accounts).
var (
	// StmtCreateDatabase creates a schema when it is missing; CHARACTER SET
	// and COLLATE only when set (an unset collation is the character set's
	// default on the server).
	StmtCreateDatabase = Statement{
		Name:    "create-database",
		SQL:     "CREATE DATABASE IF NOT EXISTS {name}{options}",
		Purpose: "MysqlDatabase: create its schema on the active site (it replicates); an existing schema is left as it is.",
	}
	// StmtSchemaSettings reads a schema's character set and collation (no
	// row: no such schema).
	StmtSchemaSettings = Statement{
		Name:    "schema-settings",
		SQL:     "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = {name}",
		Purpose: "MysqlDatabase: whether the schema exists, and its settings as the server reports them (status.appliedCharacterSet, appliedCollation).",
	}
	// StmtDropDatabase drops a schema with everything in it.
	StmtDropDatabase = Statement{
		Name:    "drop-database",
		SQL:     "DROP DATABASE IF EXISTS {name}",
		Purpose: "MysqlDatabase deletionPolicy Drop: drop the schema no other MysqlDatabase declares.",
	}
	// StmtDropUser drops an account.
	StmtDropUser = Statement{
		Name:    "drop-user",
		SQL:     "DROP USER IF EXISTS {user}@'%'",
		Purpose: "MysqlDatabase deletionPolicy Drop: drop the owner account no other MysqlDatabase claims.",
	}
)

// SchemaCatalog lists the schema statements.
func SchemaCatalog() []Statement {
	return []Statement{StmtCreateDatabase, StmtSchemaSettings, StmtDropDatabase, StmtDropUser}
}

// settingName is a character set or collation name as the CRD admits it.
var settingName = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// QuoteIdent is name as a MySQL quoted identifier.
func QuoteIdent(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// SchemaSettings are a schema's defaults as information_schema reports them.
type SchemaSettings struct {
	CharacterSet, Collation string
}

// CreateDatabase sends CREATE DATABASE IF NOT EXISTS name with CHARACTER
// SET charset when charset is set and COLLATE collation when collation is.
func (c *Client) CreateDatabase(ctx context.Context, name, charset, collation string) error {
	var opts string
	for _, o := range []struct{ kw, v string }{{" CHARACTER SET ", charset}, {" COLLATE ", collation}} {
		if o.v == "" {
			continue
		}
		if !settingName.MatchString(o.v) {
			return c.wrap(StmtCreateDatabase, fmt.Errorf("%q is not a character set or collation name", o.v))
		}
		opts += o.kw + o.v
	}
	text, err := StmtCreateDatabase.Render(map[string]any{"name": Raw(QuoteIdent(name)), "options": Raw(opts)})
	if err != nil {
		return c.wrap(StmtCreateDatabase, err)
	}
	return c.exec(ctx, StmtCreateDatabase, text)
}

// SchemaSettings reads name's settings; ok is false when there is no such
// schema.
func (c *Client) SchemaSettings(ctx context.Context, name string) (s SchemaSettings, ok bool, err error) {
	text, err := StmtSchemaSettings.Render(map[string]any{"name": Str(name)})
	if err != nil {
		return s, false, c.wrap(StmtSchemaSettings, err)
	}
	ctx, cancel := c.deadline(ctx, 0)
	defer cancel()
	err = c.db.QueryRowContext(ctx, text).Scan(&s.CharacterSet, &s.Collation)
	if errors.Is(err, sql.ErrNoRows) {
		return SchemaSettings{}, false, nil
	}
	if err != nil {
		return SchemaSettings{}, false, c.wrap(StmtSchemaSettings, err)
	}
	return s, true, nil
}

// DropDatabase drops name if it exists.
func (c *Client) DropDatabase(ctx context.Context, name string) error {
	text, err := StmtDropDatabase.Render(map[string]any{"name": Raw(QuoteIdent(name))})
	if err != nil {
		return c.wrap(StmtDropDatabase, err)
	}
	return c.exec(ctx, StmtDropDatabase, text)
}

// DropUser drops user@'%' if it exists.
func (c *Client) DropUser(ctx context.Context, user string) error {
	text, err := StmtDropUser.Render(map[string]any{"user": Str(user)})
	if err != nil {
		return c.wrap(StmtDropUser, err)
	}
	return c.exec(ctx, StmtDropUser, text)
}
