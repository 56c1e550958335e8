package specs

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
	"p2patomics/harness/suite"
	"p2patomics/internal/device"
	"p2patomics/specs/sampling"
)

// Issue 52 item 2: a host copy case takes the samples its ungated metric
// needs (perf.MinSamples timed, after the warm-up), a GPU's at most the 5
// its bands were recorded with (samplePlan may stop it sooner). A pure
// check: this file's tests run before every suite run (the own Go tests),
// so it starts no world. Planted: the fixed 6 for both fails it.
func TestHostCopySamplesFromPower(t *testing.T) {
	if got := copySamples(false); got != perf.MinSamples+1 {
		t.Errorf("host copy samples %d, want %d (a warm-up and perf.MinSamples timed: its metric is not gated)", got, perf.MinSamples+1)
	}
	if got := copySamples(true); got != 6 {
		t.Errorf("GPU copy samples %d, want 6 (a warm-up and the 5 timed its bands were recorded with)", got)
	}
}

// Issue 52 item 2: in a run gated on a perf baseline a GPU perf case stops
// sampling once its own samples are enough for its line (power.Enough), the
// line of the baseline a run on its GPUs is judged by (a folder holds one a
// card): on the H100 (its machine-scoped file, tolerance 8 %) quiet samples
// stop at perf.MinSamples and noisy ones do not, on an H200 (the sku file,
// 40 % here) the noisy ones do too; a card with no file, a case without a
// line, an ungated run, a recording run and an A/B run take today's 5.
// Planted: stopping without lines (today's count always) fails the first
// row; the folder's perf.txt for every card fails the second; reading the
// lines while recording or under --ab fails the last checks.
func TestPerfSamplesStopOnTheRunsNoise(t *testing.T) {
	dir := t.TempDir()
	const h100 = "GPU-e9bfb33c-6c2b-8234-68ee-88b3a9acdfb7"
	files := map[string]string{
		perf.FileName: "# stack: vendor=nvidia arch=sm_90 driver=580\n# scope: sku NVIDIA H200\n# recorded: 3 runs in fresh worlds\n" +
			"cuda.vmm-host.perf.copy_ce_read.r0r1 bw_ce_read_gbps >= 30 GB/s | band 50.557..50.689 runs=3 tol=40% family=copy one direction\n",
		"perf-nvidia-h100-80gb-hbm3.txt": "# stack: vendor=nvidia arch=sm_90 driver=580\n# scope: machine " + h100 + "\n# recorded: 3 runs in fresh worlds\n" +
			"cuda.vmm-host.perf.copy_ce_read.r0r1 bw_ce_read_gbps >= 46.5124 GB/s | band 50.557..50.689 runs=3 tol=8% family=copy one direction\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var o suite.Options
	o.Register(flag.NewFlagSet("t", flag.ContinueOnError))
	o.Ranks, o.Expectations = 2, dir
	const metric = "bw_ce_read_gbps"
	quiet := []float64{50.48, 50.21, 50.55}
	noisy := []float64{50.5, 46.9, 52.1, 50.2}
	card := func(name, uuid string) report.Environment {
		return report.Environment{GPUs: []report.GPU{{Info: device.Info{Name: name, UUID: uuid}}}}
	}
	onH100, onH200, onA100 := card("NVIDIA H100 80GB HBM3", h100), card("NVIDIA H200", "GPU-1"), card("NVIDIA A100", "GPU-2")
	stops := func(o *suite.Options, variant string, env report.Environment, got []float64) bool {
		b := &builder{o: o, backend: "cuda", kind: "vmm-host"}
		sp := b.samplePlan(variant)
		return stopped(sp.linesFor(env), sp.target, metric, got)
	}
	for _, c := range []struct {
		variant string
		env     report.Environment
		got     []float64
		want    bool
	}{
		{"copy_ce_read.r0r1", onH100, quiet, true},
		{"copy_ce_read.r0r1", onH100, noisy, false},
		{"copy_ce_read.r0r1", onH200, noisy, true}, // its sku file's 40 %
		{"copy_ce_read.r0r1", onH100, quiet[:2], false},
		{"copy_ce_read.r0r1", onH100, append(noisy, 50.3), true}, // today's 5
		{"copy_ce_read.r0r1", onA100, quiet, false},              // no file for this card
		{"copy_ce_read.r1r0", onH100, quiet, false},              // no line: today's 5
	} {
		if got := stops(&o, c.variant, c.env, c.got); got != c.want {
			t.Errorf("%s on %s after %v: done %v, want %v", c.variant, c.env.GPUs[0].Name, c.got, got, c.want)
		}
	}
	allow := o
	allow.AllowStackMismatch = true
	if !stops(&allow, "copy_ce_read.r0r1", onA100, noisy) {
		t.Errorf("--allow-stack-mismatch on a card with no file: want the folder's perf.txt (40 %%), as the gate judges")
	}
	rec := o
	rec.UpdateExpectations = true
	none := o
	none.Expectations = ""
	abRun := o
	abRun.AB = "same"
	for name, o := range map[string]*suite.Options{"a recording run": &rec, "an ungated run": &none, "an A/B run": &abRun} {
		if stops(o, "copy_ce_read.r0r1", onH100, quiet) {
			t.Errorf("%s stopped at %d samples, want today's %d (every band is of %d)", name, len(quiet), todayTimed, todayTimed)
		}
	}
}

// A ping-pong's timed samples are sized from its warm-up: on host memory
// (vmm-host, 4.2 µs a round trip on one H100) about 50 ms, on device
// memory (1.15 µs) today's 625 rounds a placement. Planted: returning most
// (today's count always) fails the first row.
func TestPingPongRoundsFromTheWarmUp(t *testing.T) {
	warm := uint64(625 / pingPongWarmShare)
	at := func(rtt time.Duration) time.Duration { return time.Duration(warm*sampling.Placements) * rtt }
	for _, c := range []struct {
		rtt  time.Duration
		want uint64
	}{
		{4460 * time.Nanosecond, 3 * warm}, // vmm-host, bounded polls: 22 ms warm-up
		{1226 * time.Nanosecond, 625},      // vmm: 6 ms warm-up, 9 × 78 capped at 625
		{0, warm},                          // no elapsed time: the warm-up's count
	} {
		if got := pingPongRounds(625, warm, at(c.rtt)); got != c.want {
			t.Errorf("round trip %v (warm-up %v): %d rounds, want %d", c.rtt, at(c.rtt), got, c.want)
		}
	}
}
