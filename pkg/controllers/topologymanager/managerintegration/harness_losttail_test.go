package managerintegration

import (
	"testing"

	"github.com/shipstream/bloodraven/pkg/gtid"
)

// TestLostTail: of what a deposed primary holds beyond a later target, only
// its own writes past the set promoted when it was deposed are its lost
// tail; everything else it holds stays for invariant 3 to judge.
func TestLostTail(t *testing.T) {
	const pdx, iad = "000000c9-0000-4000-8000-0000000000c9", "000000c8-0000-4000-8000-0000000000c8"
	for _, c := range []struct{ name, held, promoted, want string }{
		{"its writes while cut off", pdx + ":1-2130," + iad + ":1-23", iad + ":1-23," + pdx + ":1-1985", pdx + ":1986-2130"},
		{"another site's transactions are not its tail", iad + ":1-30," + pdx + ":1-1985", iad + ":1-23," + pdx + ":1-1985", ""},
		{"only its own writes past the promoted set", pdx + ":1-1985", iad + ":1-23," + pdx + ":1-1900", pdx + ":1901-1985"},
		{"a tagged tail", pdx + ":1-10:deploy:1-4", pdx + ":1-10", pdx + ":deploy:1-4"},
		{"nothing beyond", pdx + ":1-10", pdx + ":1-10", ""},
	} {
		got := lostTail(gtid.MustParse(c.held), gtid.MustParse(c.promoted), pdx)
		if !got.Equal(gtid.MustParse(c.want)) {
			t.Errorf("%s: lostTail = %q, want %q", c.name, got.OneLine(), c.want)
		}
	}
}
