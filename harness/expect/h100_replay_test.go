package expect

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// h100Dir is issue 48's one-H100 PCIe command at 57dfa3e, as
// testdata/runs holds it (the results.json.gz of results/h100x1-580.159.04/
// issue48-57dfa3e, byte-identical): record (--update-expectations
// --perf-runs=3), base/perf.txt (the perf.txt it wrote) and the ten healthy
// runs gated against it, of which the tenth failed on
// cuda.vmm-host.perf.copy_ce_read.r0r1 (46.06 GB/s under a 46.51 limit).
const h100Dir = "../../testdata/runs/h100x1-580.159.04/issue48-57dfa3e"

func loadH100(t *testing.T, run string) *report.Report {
	t.Helper()
	rep, err := report.Read(filepath.Join(h100Dir, run, "results.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func h100Healthy(t *testing.T) []*report.Report {
	t.Helper()
	var reps []*report.Report
	for i := 1; i <= 10; i++ {
		reps = append(reps, loadH100(t, fmt.Sprintf("healthy-%d", i)))
	}
	return reps
}

// passesOf splits an --update-expectations --perf-runs=N run into the N
// passes perf.Record read when the suite wrote its perf.txt: the main
// pass's results as they are, then one report per extra pass whose gated
// metrics hold that pass's median (the result's perf_reruns, in pass
// order; a metric an extra pass did not measure is left out of it).
func passesOf(rep *report.Report) []*report.Report {
	passes := []*report.Report{rep}
	extra := 0
	for _, r := range rep.Results {
		for _, rr := range r.PerfReruns {
			extra = max(extra, len(rr))
		}
	}
	for i := 0; i < extra; i++ {
		var results []report.Result
		for _, r := range rep.Results {
			if len(r.PerfReruns) == 0 {
				continue
			}
			ms := map[string]report.Metric{}
			for name, rr := range r.PerfReruns {
				if m, ok := r.Metrics[name]; ok && i < len(rr) {
					m.Median = rr[i]
					ms[name] = m
				}
			}
			r.Metrics, r.PerfReruns = ms, nil
			results = append(results, r)
		}
		passes = append(passes, &report.Report{Schema: rep.Schema, Environment: rep.Environment, Results: results})
	}
	return passes
}

func readPerf(t *testing.T, path string) *perf.File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := perf.Parse(path, b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// h100Rerecorded is the H100's perf.txt recorded again, by today's rule,
// from the three passes its record run measured.
func h100Rerecorded(t *testing.T) *perf.File {
	t.Helper()
	base := readPerf(t, filepath.Join(h100Dir, "base", "perf.txt"))
	f, err := perf.Record(passesOf(loadH100(t, "record")), []string{"pass 1", "pass 2", "pass 3"}, base.Stack)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The record run's three passes give back the perf.txt the suite wrote
// from them, line for line, except where the host-memory copy family
// (perf.CopyHost) changed the rule: those lines keep their band and take
// tol = max(12 %, 4 × CV), so the floor is a recording rule a reviewer
// sees in the file, not a judge's afterthought.
func TestH100BaselineRerecorded(t *testing.T) {
	base := readPerf(t, filepath.Join(h100Dir, "base", "perf.txt"))
	// Compared as written: perf.txt keeps 6 significant digits.
	f, err := perf.Parse("rerecorded", perf.Format(h100Rerecorded(t)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Scope != base.Scope {
		t.Errorf("scope %q, the run wrote %q", f.Scope, base.Scope)
	}
	old := map[string]perf.Line{}
	for _, l := range base.Lines {
		old[l.Key()] = l
	}
	if len(f.Lines) != len(base.Lines) {
		t.Errorf("%d lines, the run wrote %d", len(f.Lines), len(base.Lines))
	}
	host := 0
	for _, l := range f.Lines {
		o, ok := old[l.Key()]
		if !ok {
			t.Errorf("%s: not in the recorded perf.txt", l.Key())
			continue
		}
		if l.Lo != o.Lo || l.Hi != o.Hi || l.Runs != o.Runs || l.Op != o.Op || l.Unit != o.Unit {
			t.Errorf("%s: band %v..%v runs=%d, the run wrote %v..%v runs=%d", l.Key(), l.Lo, l.Hi, l.Runs, o.Lo, o.Hi, o.Runs)
		}
		if l.Family != perf.CopyHost.Name {
			if l.Tol != o.Tol || l.Limit != o.Limit || l.Family != o.Family {
				t.Errorf("%s: tol %v limit %v family %q, the run wrote %v %v %q", l.Key(), l.Tol, l.Limit, l.Family, o.Tol, o.Limit, o.Family)
			}
			continue
		}
		host++
		if !strings.Contains(l.ID, ".vmm-host.") || strings.Contains(l.Metric, "bidir") {
			t.Errorf("%s: in the host-memory copy family", l.Key())
		}
		want := math.Max(perf.CopyHost.Floor, o.Tol)
		if math.Abs(l.Tol-want) > 1e-9 || perf.Num(l.Limit) != perf.Num(l.Lo*(1-want)) {
			t.Errorf("%s: tol %v limit %v, want tol %v limit %v", l.Key(), l.Tol, l.Limit, want, l.Lo*(1-want))
		}
	}
	if host != 8 {
		t.Errorf("%d host-memory copy lines, want vmm-host's 8 one-direction copies", host)
	}
}

// vmmHostCE picks the vmm-host kind's copy-engine metrics.
func vmmHostCE(id, m string) bool { return strings.Contains(id, ".vmm-host.") && ce(id, m) }

// TestPerfGateH100Runs replays the perf gate on issue 48's ten healthy
// gated runs on one H100 PCIe against the baseline their record run
// measured, offline (no reruns) and with the reruns each run recorded.
// Under the rule the runs were gated by (base/perf.txt: the host-memory
// copies at the 8 % of device copies) the tenth fails on the machine-wide
// shift of pinned host memory bandwidth; re-recorded by today's rule all
// ten pass, and every one of them with its vmm-host copy-engine medians
// ÷1.2 (-16.7 %) fails naming all four, as it does with every copy-engine
// metric ÷1.2 (the twelve one-direction ones named).
func TestPerfGateH100Runs(t *testing.T) {
	runs := h100Healthy(t)
	base := readPerf(t, filepath.Join(h100Dir, "base", "perf.txt"))
	failed := 0
	for i, rep := range runs {
		for _, fd := range JudgeMetrics(base, rep.Results, PerfReruns(rep.Results), "base").Failing() {
			failed++
			if i != 9 || fd.ID != "cuda.vmm-host.perf.copy_ce_read.r0r1" {
				t.Errorf("healthy-%d against the recorded perf.txt: %s", i+1, fd.Named())
			}
		}
	}
	if failed != 1 {
		t.Errorf("the recorded perf.txt failed %d metrics of the ten runs, want the tenth run's one false alarm", failed)
	}

	f := h100Rerecorded(t)
	plants := []plant{
		{name: "healthy"},
		{name: "vmm-host copy engine ÷1.2", sel: vmmHostCE, f: 1 / 1.2, must: func(l perf.Line) bool { return vmmHostCE(l.ID, l.Metric) && !l.Insensitive() }, least: 4},
		{name: "copy engine ÷1.2", sel: ce, f: 1 / 1.2, must: func(l perf.Line) bool { return ce(l.ID, l.Metric) && !l.Insensitive() }, least: 12},
	}
	counts := map[string]int{}
	for i, rep := range runs {
		for _, p := range plants {
			counts[p.name] += replayOne(t, f, rep, p, fmt.Sprintf("healthy-%d", i+1))
		}
		if p := JudgeMetrics(f, rep.Results, PerfReruns(rep.Results), "h100"); len(p.Failing()) > 0 {
			t.Errorf("healthy-%d with its recorded reruns: %s", i+1, p.Failing()[0].Named())
		}
		// In band, not merely passed: a floor that let the shift through
		// only as perf-unstable (two samples straddling the limit) would
		// leave the next such run to chance.
		for _, b := range JudgeMetrics(f, rep.Results, nil, "h100").Bands {
			if perf.Classify(b.ID, b.Metric) == perf.CopyHost && b.Verdict != report.InBand {
				t.Errorf("healthy-%d: %s %s %s %v (limit %v)", i+1, b.ID, b.Metric, b.Verdict, b.Now, b.Limit)
			}
		}
	}
	if counts["healthy"] != 0 || counts["vmm-host copy engine ÷1.2"] != 10 || counts["copy engine ÷1.2"] != 10 {
		t.Errorf("runs failing: %v, want healthy 0 and each plant 10", counts)
	}
}
