// Package planted is what TestNoCaseIDParserOutsideReport must find: the
// ways a case id was split before report.Case held its parts.
package planted

import (
	"strings"

	"p2patomics/harness/report"
)

func backend(r report.Result) string {
	b, _, _ := strings.Cut(r.ID(), ".")
	return b
}

func family(id string) string { return strings.Split(id, ".")[2] }

func host(r report.Result) bool { return strings.HasPrefix(r.ID(), "host.") }
