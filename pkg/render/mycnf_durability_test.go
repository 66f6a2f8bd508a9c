package render

import (
	"strings"
	"testing"
)

// TestMyCnfOwnsDurability: sync_binlog and innodb_flush_log_at_trx_commit
// are 1 whatever mysqlConf says, in either spelling, and an override is
// reported as ignored (docs/safety.md: a primary with relaxed durability
// restarts without commits it acknowledged).
func TestMyCnfOwnsDurability(t *testing.T) {
	g := minimal(t)
	g.Spec.MySQLConf = map[string]string{"sync_binlog": "0", "max_connections": "500"}
	g.Spec.Sites[1].MySQLConf = map[string]string{"innodb-flush-log-at-trx-commit": "2"}
	cnf, ignored, err := MyCnf(g, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"sync-binlog = 1\n", "innodb-flush-log-at-trx-commit = 1\n"} {
		if strings.Count(cnf, line) != 1 {
			t.Errorf("my.cnf has %q %d times:\n%s", line, strings.Count(cnf, line), cnf)
		}
	}
	if strings.Contains(cnf, "sync-binlog = 0") || strings.Contains(cnf, "innodb-flush-log-at-trx-commit = 2") {
		t.Errorf("my.cnf keeps an override of an operator-owned durability option:\n%s", cnf)
	}
	want := "spec.mysqlConf.sync-binlog,spec.sites[1].mysqlConf.innodb-flush-log-at-trx-commit"
	if got := strings.Join(ignored, ","); got != want {
		t.Errorf("ignored = %s, want %s", got, want)
	}
}
