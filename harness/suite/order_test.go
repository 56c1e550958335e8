package suite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// lineChecker is stdout that, as each live line is printed, reads
// results.json and finds there the case the line names, finished.
type lineChecker struct {
	path  string
	lines int
	errs  []string
}

func (l *lineChecker) Write(p []byte) (int, error) {
	s := string(p)
	if !strings.HasPrefix(s, "[") {
		return len(p), nil
	}
	l.lines++
	rep, err := report.Read(l.path)
	if err != nil {
		l.errs = append(l.errs, err.Error())
		return len(p), nil
	}
	for _, r := range rep.Results {
		if strings.Contains(s, r.ID()) && r.Outcome == report.Incomplete {
			l.errs = append(l.errs, fmt.Sprintf("line %q printed while results.json holds %s incomplete", strings.TrimSpace(s), r.ID()))
		}
	}
	return len(p), nil
}

// The sinks' order is the record's promise: results.json holds a case
// before its live line is printed, so a parent that kills the suite on a
// line it read finds that case in the record.
func TestRecordBeforeTheLiveLine(t *testing.T) {
	o := &Options{Backend: backends.HostName, Out: filepath.Join(t.TempDir(), "out"), Ranks: 2, Repeat: 1}
	if err := Prepare(o); err != nil {
		t.Fatal(err)
	}
	mk := func(id string) *harness.Case {
		return &harness.Case{ID: id, Case: report.Case{Backend: backends.HostName}, Expected: report.Pass,
			Standalone: func() (report.Outcome, string) { return report.Pass, "ok" }}
	}
	a, b := mk("host.suite.t.first"), mk("host.suite.t.second")
	w := &lineChecker{path: filepath.Join(o.Out, "results.json")}
	r := handMade(&Plan{Opts: o, planned: []*harness.Case{a, b}}, w)
	r.sinks.get().ckpt.Now = func() time.Time { return time.Unix(0, 0) } // every rewrite is cheap
	r.WatchSignals()
	defer active.Store(nil)
	r.Execute(a)
	r.Execute(b)
	if w.lines != 2 || len(w.errs) > 0 {
		t.Errorf("%d live lines; %v", w.lines, w.errs)
	}
}
