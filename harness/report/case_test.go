package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
)

// hostGolden is the host suite's results.json as main wrote it at
// 5f11245, before a result held its identity typed: every host case id,
// its labels and the environment, as the old writer spelt them.
var hostGolden = filepath.Join("testdata", "host-results.json")

func readGolden(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(hostGolden)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCaseIDIsTodays: for every host case, the parts read from the old
// record spell its id back byte for byte, through CaseID as the catalogue
// calls it, and none is kept verbatim (each is of the id grammar).
func TestCaseIDIsTodays(t *testing.T) {
	var old struct {
		Results []struct {
			ID     string   `json:"id"`
			Labels []string `json:"labels"`
		} `json:"results"`
	}
	if err := json.Unmarshal(readGolden(t), &old); err != nil {
		t.Fatal(err)
	}
	if len(old.Results) < 100 {
		t.Fatalf("golden holds %d cases", len(old.Results))
	}
	for _, r := range old.Results {
		c := report.ParseCase(r.ID, r.Labels)
		if c.Spec == "" || c.Backend != backends.HostName {
			t.Errorf("%s: not read as parts: %+v", r.ID, c)
		}
		if got := report.CaseID(c.Backend, c.Kind, c.Spec, c.Variant, c.Ranks); got != r.ID || c.ID() != r.ID {
			t.Errorf("%s: derived %q", r.ID, got)
		}
		if want := report.LabelPair(r.Labels); !reflect.DeepEqual(c.Pair, want) {
			t.Errorf("%s: pair %v, its label says %v", r.ID, c.Pair, want)
		}
	}
}

// TestParseCase: the grammar's corners, and ids outside it kept verbatim.
func TestParseCase(t *testing.T) {
	for _, c := range []struct {
		id     string
		labels []string
		want   report.Case
	}{
		{"host.memfd.litmus.iriw_u32_seqcst_sys.r3", nil, report.Case{Backend: backends.HostName, Kind: "memfd", Spec: "litmus", Variant: "iriw_u32_seqcst_sys", Ranks: 3}},
		{"host.memfd.canary.abort.after", nil, report.Case{Backend: backends.HostName, Kind: "memfd", Spec: "canary", Variant: "abort.after", Ranks: 2}},
		{"cuda.vmm.pairs.add_u64_relaxed_sys.r1r0.r8", []string{"pair=1-0"}, report.Case{Backend: "cuda", Kind: "vmm", Spec: "pairs", Variant: "add_u64_relaxed_sys.r1r0", Ranks: 8, Pair: &[2]int{1, 0}}},
		{"cuda.vmm.perf.copy_ce_write.r2r3", nil, report.Case{Backend: "cuda", Kind: "vmm", Spec: "perf", Variant: "copy_ce_write.r2r3", Ranks: 2, Pair: &[2]int{2, 3}}},
		{"host.memfd.perf.pingpong_latency_local", []string{"perf", "pair=0-0"}, report.Case{Backend: backends.HostName, Kind: "memfd", Spec: "perf", Variant: "pingpong_latency_local", Ranks: 2, Pair: &[2]int{0, 0}}},
		{"a.b.c.r1", nil, report.Case{Backend: "a", Kind: "b", Spec: "c", Variant: "r1", Ranks: 2}},
	} {
		if got := report.ParseCase(c.id, c.labels); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseCase(%s) = %+v, want %+v", c.id, got, c.want)
		}
	}
	// Whatever the id, its case spells it back: one outside the grammar
	// (fewer than four fields) is kept verbatim, without parts; a last
	// field the writer never makes a world size (.r2, a leading zero)
	// stays in the variant.
	for id, spec := range map[string]string{"x": "", "a.b.c": "", "": "", "a.b.c.v.r2": "c", "a.b.c.v.r03": "c", "a.b.c.v.": "c"} {
		c := report.ParseCase(id, nil)
		if c.ID() != id || c.Spec != spec || c.Ranks != report.DefaultRanks {
			t.Errorf("ParseCase(%q) = %+v, ID %q", id, c, c.ID())
		}
	}
}

// TestResultsJSONRoundTrip: the old record read into the typed model and
// written again is the same JSON (every key, value and type), so the
// results.json shape did not change with the Go types; and a result
// written from its parts alone carries the id and no part of its own.
func TestResultsJSONRoundTrip(t *testing.T) {
	in := readGolden(t)
	var rep report.Report
	if err := json.Unmarshal(in, &rep); err != nil {
		t.Fatal(err)
	}
	if err := rep.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(&rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("results.json changed in a read and write:\n%s", firstDiff(in, append(out, '\n')))
	}
	r := report.Result{Case: report.Case{Backend: backends.HostName, Kind: "memfd", Spec: "pairs", Variant: "add_u64_relaxed_sys.r0r1", Ranks: 4, Pair: &[2]int{0, 1}}, Labels: []string{}, Ranks: []report.Rank{}}
	j, _ := json.Marshal(r)
	var m map[string]any
	_ = json.Unmarshal(j, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if m["id"] != "host.memfd.pairs.add_u64_relaxed_sys.r0r1.r4" || !slices.Equal(keys, []string{"detail", "duration_s", "expected", "id", "labels", "outcome", "ranks"}) {
		t.Errorf("a result from its parts: %s", j)
	}
}

// firstDiff shows where two texts part.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return "old: " + string(a[lo:min(len(a), i+200)]) + "\nnew: " + string(b[lo:min(len(b), i+200)]) + "\n(bytes equal: " + map[bool]string{true: "yes", false: "no"}[bytes.Equal(a, b)] + ")"
}
