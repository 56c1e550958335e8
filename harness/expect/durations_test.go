package expect

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"p2patomics/harness/report"
)

// durations.txt: WriteBaseline records the longest attempt of every case
// that ran as meant (a pass, or its expected outcome), never a skip, a
// miss or an unexpected ending; Load reads it back, and a malformed line
// is an error naming its file and line.
func TestDurationsRoundTrip(t *testing.T) {
	dir, _, rep := nvidiaBaseline(t)
	durs := map[string]float64{"cuda.vmm.fixed": 0.25, "cuda.vmm.canary": 1.5, "cuda.vmm.new.fail": 9, "cuda.vmm.skipme": 0.001, "cuda.vmm.racy": 0.5}
	for i := range rep.Results {
		rep.Results[i].Duration = durs[rep.Results[i].ID()]
	}
	rep.Results[1].Rerun = &report.Attempt{Outcome: report.Pass, Duration: 0.75} // cuda.vmm.fixed's longer rerun
	if err := WriteBaseline(dir, rep, nil); err != nil {
		t.Fatal(err)
	}
	s, err := Load([]string{dir})
	if err != nil {
		t.Fatalf("written baseline does not load: %v", err)
	}
	want := map[string]float64{"cuda.vmm.fixed": 0.75, "cuda.vmm.canary": 1.5, "cuda.vmm.racy": 0.5}
	if !reflect.DeepEqual(s.Durations, want) {
		t.Errorf("durations = %v, want %v", s.Durations, want)
	}
	for _, bad := range []string{"cuda.vmm.x\n", "cuda.vmm.x -1\n", "cuda.vmm.x NaN\n", "Bad/Id 1\n", "cuda.vmm.x 1\ncuda.vmm.x 2\n"} {
		write(t, dir, DurationsFile, "# stack: vendor=nvidia arch=sm_90 driver=580\n"+bad)
		if _, err := Load([]string{dir}); err == nil || !strings.Contains(err.Error(), DurationsFile+":") {
			t.Errorf("%q: %v, want an error naming %s's line", bad, err, DurationsFile)
		}
	}
	// A run with nothing to time removes the old file rather than keep
	// another run's deadlines.
	for i := range rep.Results {
		rep.Results[i].Outcome = report.Skip
	}
	rep.Results[0].Outcome = report.Crash
	if err := WriteBaseline(dir, rep, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DurationsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("durations.txt left behind: %v", err)
	}
}
