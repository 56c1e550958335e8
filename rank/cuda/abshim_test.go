package cuda

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestABShimForwardsTheBindingTable: the A/B run's stand-in driver
// (scripts/ab-shim/shim.c, issue 53) defines every name the rank binds
// (this package's binding table, each alternative name too) and nothing
// else, so stack B built from it is the real driver for every call but the
// doubled device-to-device copy. A name added to the table without a
// forwarder fails here (the rank would find it absent on B only, and the
// A/B run would judge the shim, not the copy).
func TestABShimForwardsTheBindingTable(t *testing.T) {
	src, err := os.ReadFile("../../scripts/ab-shim/shim.c")
	if err != nil {
		t.Fatal(err)
	}
	def := regexp.MustCompile(`(?m)^(?:FWD\((cu\w+),|CUresult (cu\w+)\()`)
	var shim []string
	for _, m := range def.FindAllStringSubmatch(string(src), -1) {
		shim = append(shim, m[1]+m[2])
	}
	var table []string
	for _, s := range (&driver{}).symbols() {
		table = append(table, s.Names...)
	}
	slices.Sort(shim)
	slices.Sort(table)
	if !slices.Equal(shim, table) {
		t.Fatalf("shim.c defines %v\nthe binding table binds %v", shim, table)
	}
	if !regexp.MustCompile(`(?s)CUresult cuMemcpyDtoDAsync_v2\(.*CUresult r = fn\(dst, src, n, s\);.*return fn\(dst, src, n, s\);`).Match(src) {
		t.Fatal("shim.c's cuMemcpyDtoDAsync_v2 no longer issues the copy twice")
	}
}
