// Package mysqlsh is the test bed's stand-in for MySQL Shell's `mysqlsh`
// running util.dumpInstance from its command line (`mysqlsh <connection
// options> -- util dump-instance <outputUrl> [--option=value ...]`), the
// command a backup Job's dump step runs. It connects to a (simulated) MySQL
// server as a client, takes the locks and the consistent snapshot
// dumpInstance takes, and writes MySQL Shell's dump layout (pkg/backup/dump)
// with the schemas and rows the server holds. docs/mysqlsh-stand-in.md lists
// what it accepts and where it differs from MySQL Shell.
package mysqlsh

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Exit codes as MySQL Shell's main returns them: 1 for a failed connection,
// a shell option error or a runtime error of the operation; 10 for an
// argument error of a command-line API call (std::invalid_argument).
const (
	ExitOK       = 0
	ExitError    = 1
	ExitArgument = 10
)

// connection holds the shell's connection options.
type connection struct {
	host, user, password   string
	port                   int
	passwordsFromStdin     bool
	passwordOnCommandLine  bool
	sslMode                string // DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY; "" = default
	sslCA, sslCert, sslKey string
	connectTimeoutMillis   int
}

// options are util.dumpInstance's options the stand-in models.
type options struct {
	threads                        int
	bytesPerChunk                  int64
	compression                    string // zstd or none
	chunking                       bool
	consistent                     bool
	users                          bool
	includeSchemas, excludeSchemas []string
	ocimds, dryRun, showProgress   bool
	given                          map[string]string // option name (camelCase) -> value as given, for @.json "options"

}

// invocation is one parsed command line.
type invocation struct {
	conn      connection
	outputURL string
	opts      options
}

// argError is an error mysqlsh reports with ExitArgument; shellError one it
// reports with ExitError.
type argError struct{ msg string }

func (e argError) Error() string { return e.msg }

type shellError struct{ msg string }

func (e shellError) Error() string { return e.msg }

// Shell options that take a value and those that do not. Only these are
// accepted before "--"; any other is refused as mysqlsh's option parser
// refuses it ("mysqlsh: unknown option ...").
var (
	valueOptions = map[string]string{
		"-h": "--host", "--host": "--host", "-P": "--port", "--port": "--port", "-u": "--user", "--user": "--user",
		"--ssl-mode": "--ssl-mode", "--ssl-ca": "--ssl-ca", "--ssl-cert": "--ssl-cert", "--ssl-key": "--ssl-key",
		"--connect-timeout": "--connect-timeout", "--log-level": "--log-level", "--password": "--password",
		"--tls-version": "--tls-version",
	}
	flagOptions = map[string]bool{
		"--passwords-from-stdin": true, "--mysql": true, "--mc": true, "--no-wizard": true, "--nw": true,
		"--get-server-public-key": true, "--js": true, "--py": true, "--quiet-start": true,
	}
)

// parse reads argv (without the program name).
func parse(argv []string) (invocation, error) {
	inv := invocation{conn: connection{host: "localhost", port: 3306}}
	sep := -1
	for i, a := range argv {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 {
		return inv, shellError{"mysqlsh (test-bed stand-in): only the command-line API call `-- util dump-instance <outputUrl>` is supported"}
	}
	if err := parseShellOptions(argv[:sep], &inv.conn); err != nil {
		return inv, err
	}
	api := argv[sep+1:]
	if len(api) < 2 {
		return inv, argError{"Empty operations are not allowed"}
	}
	if api[0] != "util" {
		return inv, argError{fmt.Sprintf("There is no object registered under name '%s'", api[0])}
	}
	if api[1] != "dump-instance" && api[1] != "dumpInstance" {
		return inv, argError{fmt.Sprintf("Invalid operation for util object: %s", api[1])}
	}
	opts, url, err := parseDumpArgs(api[2:])
	if err != nil {
		return inv, err
	}
	inv.opts, inv.outputURL = opts, url
	return inv, nil
}

func parseShellOptions(args []string, c *connection) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") && len(a) > 2 && strings.HasPrefix(a, "-") { // -hhost, -P3306
			name, value, hasValue = a[:2], a[2:], true
		}
		if flagOptions[name] {
			if hasValue && name != "--quiet-start" {
				return shellError{fmt.Sprintf("mysqlsh: option %s does not require an argument", name)}
			}
			if name == "--passwords-from-stdin" {
				c.passwordsFromStdin = true
			}
			continue
		}
		long, ok := valueOptions[name]
		if !ok {
			return shellError{"mysqlsh: unknown option " + name}
		}
		if !hasValue {
			if i+1 >= len(args) {
				return shellError{fmt.Sprintf("mysqlsh: option %s requires an argument", name)}
			}
			i++
			value = args[i]
		}
		if err := setShellOption(c, long, value); err != nil {
			return err
		}
	}
	return nil
}

func setShellOption(c *connection, name, value string) error {
	switch name {
	case "--host":
		c.host = value
	case "--port", "--connect-timeout":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || name == "--port" && n > 65535 {
			return shellError{fmt.Sprintf("mysqlsh: invalid value for %s: %s", name, value)}
		}
		if name == "--port" {
			c.port = n
		} else {
			c.connectTimeoutMillis = n
		}
	case "--user":
		c.user = value
	case "--password":
		c.password, c.passwordOnCommandLine = value, true
	case "--ssl-mode":
		mode := strings.ToUpper(value)
		switch mode {
		case "DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY":
			c.sslMode = mode
		default:
			return shellError{"Invalid value for --ssl-mode option. Allowed values: DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY."}
		}
	case "--ssl-ca":
		c.sslCA = value
	case "--ssl-cert":
		c.sslCert = value
	case "--ssl-key":
		c.sslKey = value
	}
	return nil
}

// dumpInstance's options: the ones modelled, and the other real ones
// (accepted with their default value only, refused otherwise, so that a
// setting the stand-in would ignore never passes silently).
var (
	modelledOptions = map[string]bool{
		"threads": true, "bytesPerChunk": true, "compression": true, "chunking": true, "consistent": true,
		"users": true, "includeSchemas": true, "excludeSchemas": true, "ocimds": true, "dryRun": true,
		"showProgress": true,
	}
	otherOptions = map[string]string{ // name -> the default value the stand-in accepts
		"maxRate": "0", "defaultCharacterSet": "utf8mb4", "triggers": "true", "tzUtc": "true", "ddlOnly": "false",
		"dataOnly": "false", "skipConsistencyChecks": "false", "events": "true", "routines": "true",
		"checksum": "false", "skipUpgradeChecks": "false", "dialect": "default",
	}
)

// parseDumpArgs reads `<outputUrl> [--name=value | --name value ...]`;
// names may be camelCase or with dashes (--bytes-per-chunk), as MySQL
// Shell's command-line mapper accepts both; lists are comma separated.
func parseDumpArgs(args []string) (options, string, error) {
	o := options{threads: 4, bytesPerChunk: 64 * 1000 * 1000, compression: "zstd", chunking: true,
		consistent: true, users: true, showProgress: false, given: map[string]string{}}
	url := ""
	var invalid []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			if url != "" {
				return o, "", argError{fmt.Sprintf("Argument error at '%s': unexpected positional argument", a)}
			}
			url = a
			continue
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				value = "true" // a bare --option is true
			} else {
				i++
				value = args[i]
			}
		}
		camel := toCamelCase(name)
		if !modelledOptions[camel] {
			if def, ok := otherOptions[camel]; !ok {
				invalid = append(invalid, "--"+name)
				continue
			} else if value != def {
				return o, "", argError{fmt.Sprintf("Argument error at '%s': the test-bed mysqlsh stand-in does not model --%s other than %s", a, camel, def)}
			}
		}
		o.given[camel] = value
		if err := o.set(camel, value); err != nil {
			return o, "", argError{fmt.Sprintf("Argument error at '%s': %s", a, err.Error())}
		}
	}
	if len(invalid) > 0 {
		plural := " is"
		if len(invalid) > 1 {
			plural = "s are"
		}
		return o, "", argError{fmt.Sprintf("The following option%s invalid: %s", plural, strings.Join(invalid, ", "))}
	}
	if url == "" {
		return o, "", argError{"Util.dumpInstance: Argument #1 is expected to be a string"}
	}
	return o, url, o.validate()
}

func (o *options) set(name, value string) error {
	switch name {
	case "threads":
		n, err := strconv.Atoi(value)
		if err != nil {
			return errors.New("Option 'threads' UInteger expected, but value is String")
		}
		o.threads = n
	case "bytesPerChunk":
		n, err := parseBytes(value)
		if err != nil {
			return err
		}
		o.bytesPerChunk = n
	case "compression":
		o.compression = strings.ToLower(value)
	case "includeSchemas", "excludeSchemas":
		items, err := parseList(value)
		if err != nil {
			return err
		}
		if name == "includeSchemas" {
			o.includeSchemas = append(o.includeSchemas, items...) // a repeated list option adds to the list
		} else {
			o.excludeSchemas = append(o.excludeSchemas, items...)
		}
	default: // booleans
		b, err := parseBool(value)
		if err != nil {
			return fmt.Errorf("Option '%s' Bool expected, but value is String", name)
		}
		switch name {
		case "chunking":
			o.chunking = b
		case "consistent":
			o.consistent = b
		case "users":
			o.users = b
		case "ocimds":
			o.ocimds = b
		case "dryRun":
			o.dryRun = b
		case "showProgress":
			o.showProgress = b
		}
	}
	return nil
}

func (o *options) validate() error {
	switch {
	case o.threads < 1:
		return argError{"Argument #2: The value of 'threads' option must be greater than 0."}
	case o.bytesPerChunk < 128*1000:
		return argError{"Argument #2: The value of 'bytesPerChunk' option must be greater than or equal to 128k."}
	case o.compression != "zstd" && o.compression != "none":
		return argError{fmt.Sprintf("Argument #2: The option 'compression' value '%s' is not modelled by the test-bed mysqlsh stand-in (zstd or none)", o.compression)}
	case o.users:
		// Bloodraven's backups never dump accounts (the group's accounts
		// are the operator's); the simulator has no account dump to read.
		return argError{"Argument #2: the test-bed mysqlsh stand-in dumps no users: pass --users=false"}
	case o.ocimds || o.dryRun:
		return argError{"Argument #2: the test-bed mysqlsh stand-in does not model ocimds or dryRun"}
	}
	return nil
}

// parseBytes reads a size as MySQL Shell does: digits with an optional k, M
// or G suffix (powers of 1000).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1000, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1000*1000, s[:len(s)-1]
	case strings.HasSuffix(s, "G"), strings.HasSuffix(s, "g"):
		mult, s = 1000*1000*1000, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("Wrong input number \"%s\"", s)
	}
	return n * mult, nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

// parseList reads a list option's value as MySQL Shell's command-line
// mapper does: a JSON array of strings, or items separated by commas, each
// either quoted ("a,b" or 'a,b') or bare with \, \" \' and \= as escapes.
func parseList(s string) ([]string, error) {
	if strings.HasPrefix(strings.TrimSpace(s), "[") {
		var items []string
		if err := json.Unmarshal([]byte(s), &items); err != nil {
			return nil, fmt.Errorf("String expected in the list, but %v", err)
		}
		return items, nil
	}
	var out []string
	for i := 0; i < len(s); {
		var item string
		if q := s[i]; q == '"' || q == '\'' {
			end := strings.IndexByte(s[i+1:], q)
			if end < 0 {
				return nil, errors.New("Missing closing quote")
			}
			item, i = s[i+1:i+1+end], i+end+2
		} else {
			end := i
			for end < len(s) && (s[end] != ',' || end > 0 && s[end-1] == '\\') {
				end++
			}
			item, i = unescape(s[i:end]), end
		}
		out = append(out, item)
		if i < len(s) {
			if s[i] != ',' {
				return nil, errors.New("Missing comma after list value")
			}
			i++
		}
	}
	return out, nil
}

func unescape(s string) string {
	return strings.NewReplacer(`\,`, ",", `\"`, `"`, `\'`, "'", `\=`, "=").Replace(s)
}

// toCamelCase turns bytes-per-chunk into bytesPerChunk; a camelCase name is
// left as it is.
func toCamelCase(s string) string {
	var b strings.Builder
	up := false
	for _, r := range s {
		if r == '-' {
			up = true
			continue
		}
		if up {
			r, up = unicode.ToUpper(r), false
		}
		b.WriteRune(r)
	}
	return b.String()
}
