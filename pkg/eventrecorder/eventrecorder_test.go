package eventrecorder

import (
	"testing"

	"github.com/shipstream/bloodraven/pkg/apis/shipstream/v1alpha1"
)

func TestSchemeKnowsBloodravenKinds(t *testing.T) {
	s := Scheme()
	for _, kind := range []string{"MysqlDatabase", "MysqlFailoverGroup", "MysqlBackup"} {
		if !s.Recognizes(v1alpha1.SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not know %s", kind)
		}
	}
}
