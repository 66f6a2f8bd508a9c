package backup

import (
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
)

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
