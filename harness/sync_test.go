package harness_test

import (
	"flag"
	"strings"
	"testing"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
	"p2patomics/specs"
	"p2patomics/wire"
)

// hostCase is the catalogue's host case spec.variant in a world of 2.
func hostCase(t *testing.T, spec, variant string) *harness.Case {
	t.Helper()
	var o suite.Options
	o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
	o.Ranks = 2
	for _, c := range specs.Catalogue(&o, backends.HostName, "memfd") {
		if c.Spec == spec && c.Variant == variant {
			return c
		}
	}
	t.Fatalf("no host case %s.%s in the catalogue", spec, variant)
	return nil
}

// TestAReplyBeforeTheWriteLandsFails (issue 35, docs/SYNC.md): a rank
// replies only when the device has done it. On the host backend a Write
// that replies without its bytes landing is noop:memcpy_htod (the copy
// into the shared mapping is skipped, success is answered): the cases that
// read what another rank wrote must not pass, owner_frees included, whose
// peer read is compared with the value the owner wrote (item 5). Without
// the rule both pass, so the test can fail. Since every read is verified
// (harness/readcheck.go), the first check to fail is the read check's own
// frame, which the harness writes and which does not land either: the
// case fails with "read-back integrity", before its own comparison.
func TestAReplyBeforeTheWriteLandsFails(t *testing.T) {
	for _, tc := range []struct {
		spec, variant string
		rules         []string
		want          report.Outcome
		detail        string
	}{
		{"lifetime", "owner_frees", nil, report.Pass, ""},
		{"lifetime", "owner_frees", []string{"noop:memcpy_htod"}, report.Fail, "read-back integrity: "},
		{"fdexchange", "pattern", nil, report.Pass, ""},
		{"fdexchange", "pattern", []string{"noop:memcpy_htod"}, report.Fail, "read-back integrity: "},
	} {
		set := wire.DefaultSettings
		set.Inject = tc.rules
		r := harness.NewRunner(backends.HostName, set, 1)
		res := r.Run(hostCase(t, tc.spec, tc.variant))
		r.Close()
		if res.Outcome != tc.want || !strings.Contains(res.Detail, tc.detail) {
			t.Errorf("%s.%s under %v: %s (%s), want %s naming %q", tc.spec, tc.variant, tc.rules, res.Outcome, res.Detail, tc.want, tc.detail)
		}
	}
}
