package harness

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// Issue 36 item 3: a bandwidth metric whose median is below FloorFraction
// of its ceiling fails the case, with a detail naming the metric, value,
// ceiling and fraction; one at the floor passes; a metric without a
// ceiling, and a body that already failed, are left as they are.
func TestPhysicsFloor(t *testing.T) {
	c := world("vmm", h200("GPU-a", false), h200("GPU-a", false))
	ceil := c.CopyCeiling(Flow{Exec: 0, Src: c.MemLoc(0), Dst: c.MemLoc(1)}) // 2458.4 GB/s: HBM, 2 bytes per byte
	at := FloorFraction * ceil.Value
	for _, tc := range []struct {
		name    string
		samples []float64
		fail    bool
	}{
		{"healthy", []float64{2100, 2090, 2110}, false},
		{"at the floor", []float64{at, at + 1, at - 1}, false},
		{"halved", []float64{1050, 1045, 1055}, true},
		// One slow sample in five is noise, not a halved engine: the
		// median decides.
		{"one slow sample", []float64{2100, 300, 2100, 2090, 2110}, false},
		{"just below", []float64{at - 1, at - 2, at - 1}, true},
		// One window (the all-to-all copies): its low reading on a
		// healthy H200 (46.0%) was the two processes' launch skew; too
		// few samples for the floor.
		{"one sample", []float64{0.46 * ceil.Value}, false},
		{"two samples", []float64{0.46 * ceil.Value, 0.46 * ceil.Value}, false},
	} {
		c.Metrics = nil
		for _, v := range tc.samples {
			if err := c.Bandwidth("bw_ce_write_gbps", "m", ceil, v); err != nil {
				t.Fatal(err)
			}
		}
		err := floorCheck(c, nil)
		var fe *FailError
		if got := errors.As(err, &fe); got != tc.fail {
			t.Errorf("%s: %v, want fail %v", tc.name, err, tc.fail)
			continue
		}
		if tc.fail {
			for _, want := range []string{"bw_ce_write_gbps", "GB/s is", "% of its 2458.4 GB/s ceiling", "hbm of GPU-a", "below the 50% physics floor"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: detail %q lacks %q", tc.name, err, want)
				}
			}
		}
	}
	c.Metrics = nil
	c.Metric(report.MetricKind{Name: "bw_x_gbps", Unit: "GB/s", Better: report.Higher}, "m", 0.001) // no ceiling: no floor
	if err := floorCheck(c, nil); err != nil {
		t.Errorf("a metric without a ceiling met a floor: %v", err)
	}
	body := errors.New("the body's own error")
	c.Metrics = nil
	_ = c.Bandwidth("bw_ce_write_gbps", "m", ceil, 10)
	if err := floorCheck(c, body); err != body {
		t.Errorf("the floor replaced the body's error: %v", err)
	}
}

// The floor must not trip a healthy committed H200 metric: every metric
// with a ceiling in every committed results file, in a passing case run
// without injector rules, sits at or above FloorFraction of its ceiling.
// Raising FloorFraction past the lowest (0.590, vmm-host's alltoall and
// both-direction kernel copies) fails here.
func TestFloorBelowEveryCommittedHealthyMetric(t *testing.T) {
	// The committed GPU runs as the tests read them (testdata/runs:
	// gzipped from results/, which tests never read).
	files, err := filepath.Glob("../testdata/runs/*/results.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../testdata/runs/*/*/results.json.gz")
	files = append(files, more...)
	type metric struct {
		Median  float64 `json:"median"`
		N       int     `json:"n"`
		Ceiling *struct {
			Value float64 `json:"value"`
		} `json:"ceiling"`
	}
	var checked int
	lowest, lowestAt := 1.0, ""
	for _, f := range files {
		b, err := report.ReadRaw(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Results []struct {
				ID      string            `json:"id"`
				Outcome string            `json:"outcome"`
				Inject  []string          `json:"inject"`
				Metrics map[string]metric `json:"metrics"`
			} `json:"results"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range doc.Results {
			if r.Outcome != "pass" || len(r.Inject) > 0 {
				continue
			}
			for name, m := range r.Metrics {
				if m.Ceiling == nil || m.Ceiling.Value <= 0 || m.N < FloorMinSamples {
					continue // no floor (FloorMinSamples: one window is not a bandwidth)
				}
				checked++
				frac := m.Median / m.Ceiling.Value
				if frac < lowest {
					lowest, lowestAt = frac, f+" "+r.ID+" "+name
				}
				if frac < FloorFraction {
					t.Errorf("%s %s %s: %.4g is %.1f%% of its ceiling %.4g, below the %.0f%% floor", f, r.ID, name, m.Median, 100*frac, m.Ceiling.Value, 100*FloorFraction)
				}
			}
		}
	}
	// The 7 1xH200 fixtures hold 30 bandwidth metrics each.
	if checked < 200 {
		t.Fatalf("only %d metrics with a ceiling found in %d files: the committed runs moved?", checked, len(files))
	}
	t.Logf("%d metrics with a ceiling; the lowest healthy is %.1f%% (%s), the floor %.0f%%", checked, 100*lowest, lowestAt, 100*FloorFraction)
}
