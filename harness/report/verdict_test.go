package report_test

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"p2patomics/harness/report"
	"p2patomics/internal/device"
)

// h200 is an environment as a PCIe H200 reports it ("0": no host-native
// atomics), in the JSON shape results.json holds: the rank's typed answer
// in caps, the raw attribute beside it for the reader.
func h200(hostNative string) map[string]any {
	gpu := func(o int) map[string]any {
		return map[string]any{"ordinal": o, "name": "NVIDIA H200", "arch": "sm_90",
			"attrs": map[string]any{"host_native_atomic_supported": hostNative},
			"caps": map[string]any{"host_atomics": map[string]any{"ok": hostNative == "1",
				"reason": fmt.Sprintf("device %d: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is %q", o, hostNative)}}}
	}
	return map[string]any{"vendor": "nvidia", "gpus": []any{gpu(0), gpu(1)},
		"nvidia": map[string]any{"driver": "580.159.04"}, "harness": map[string]any{"commit": "abc1234"}}
}

var needs = report.Needs(device.CapHostAtomics)

func TestNotSupportedReason(t *testing.T) {
	skip := report.Result{Case: report.ParseCase("cuda.vmm.cpugpu.x", nil), Outcome: report.Skip, Expected: report.Pass,
		Detail: `device 0: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is "0", need 1`}
	if got := report.NotSupportedReason(skip, report.Environment{}); !strings.Contains(got, "HOST_NATIVE_ATOMIC_SUPPORTED") {
		t.Errorf("capability skip: reason %q does not name the attribute", got)
	}
	missing := skip
	missing.Verdict = report.Missing
	if got := report.NotSupportedReason(missing, report.Environment{}); got != "" {
		t.Errorf("a gate's missing entry is not not-supported: %q", got)
	}
	lost := report.Result{Case: report.ParseCase("cuda.vmm-host.counter.add", nil), Labels: []string{"atomics", needs}, Outcome: report.Fail,
		Expected: report.Pass, Detail: "lost updates: 81760"}
	got := report.NotSupportedReason(lost, report.EnvironmentOf(h200("0")))
	if !strings.Contains(got, `device 0 lacks host_atomics (device 0: CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED is "0")`) || !strings.Contains(got, "lost updates: 81760") {
		t.Errorf("vmm-host loss on a device without host-native atomics: reason %q (want the attribute and the evidence)", got)
	}
	if got := report.NotSupportedReason(lost, report.EnvironmentOf(h200("1"))); got != "" {
		t.Errorf("the device has the capability: the loss is a real failure, got not-supported %q", got)
	}
	crash := lost
	crash.Outcome = report.Crash
	if got := report.NotSupportedReason(crash, report.EnvironmentOf(h200("0"))); got != "" {
		t.Errorf("a crash is never explained by a missing capability: %q", got)
	}
	unlabelled := lost
	unlabelled.Labels = []string{"atomics"}
	if got := report.NotSupportedReason(unlabelled, report.EnvironmentOf(h200("0"))); got != "" {
		t.Errorf("a case without needs= is judged as it is: %q", got)
	}
}

// TestNeedsReadsTheTypedCap: needs= names a capability and is answered
// from the ranks' typed Caps, never from a raw attribute: a device whose
// caps say no lacks it whatever its attrs hold (AMD has no such attribute),
// and one whose caps say yes does not (a stale or vendor-specific
// attribute decides nothing). A label from before capabilities had names
// (committed results.json files) reads the same capability; a name Caps
// has no field for, and an unanswered capability, explain nothing.
func TestNeedsReadsTheTypedCap(t *testing.T) {
	lost := report.Result{Case: report.ParseCase("hip.fine.counter.add", nil), Labels: []string{needs}, Outcome: report.Fail, Expected: report.Pass, Detail: "lost 3"}
	gpu := func(caps map[string]any, attrs map[string]any) map[string]any {
		return map[string]any{"gpus": []any{map[string]any{"ordinal": 2, "caps": caps, "attrs": attrs}}}
	}
	no := map[string]any{"host_atomics": map[string]any{"ok": false, "reason": "HSA: coarse pool, no system-scope atomics"}}
	yes := map[string]any{"host_atomics": map[string]any{"ok": true, "reason": "NVLink-C2C"}}
	zero := map[string]any{"host_native_atomic_supported": "0"}
	if got := report.NotSupportedReason(lost, report.EnvironmentOf(gpu(no, nil))); !strings.Contains(got, "device 2 lacks host_atomics (HSA: coarse pool") {
		t.Errorf("caps say no, no attribute: reason %q", got)
	}
	if got := report.NotSupportedReason(lost, report.EnvironmentOf(gpu(yes, zero))); got != "" {
		t.Errorf("caps say yes: the attribute decides nothing, got %q", got)
	}
	legacy := lost
	legacy.Labels = []string{report.NeedsPrefix + "host_native_atomic_supported"}
	if got := report.NotSupportedReason(legacy, report.EnvironmentOf(gpu(no, nil))); !strings.Contains(got, "lacks host_atomics") {
		t.Errorf("a committed record's label: reason %q", got)
	}
	typo := lost
	typo.Labels = []string{report.NeedsPrefix + "host_atomic"}
	if got := report.NotSupportedReason(typo, report.EnvironmentOf(gpu(no, zero))); got != "" {
		t.Errorf("needs= a name Caps lacks: %q", got)
	}
	if got := report.NotSupportedReason(lost, report.EnvironmentOf(gpu(map[string]any{}, zero))); got != "" {
		t.Errorf("an unanswered capability explains nothing: %q", got)
	}
	typed := report.Environment{GPUs: []report.GPU{{Info: device.Info{Ordinal: 1, Caps: device.Caps{HostAtomics: device.No("typed no")}}}}}
	if got := report.NotSupportedReason(lost, typed); !strings.Contains(got, "device 1 lacks host_atomics (typed no)") {
		t.Errorf("typed GPU facts: %q", got)
	}
}

func TestSummarizeLine(t *testing.T) {
	pass := report.Result{Case: report.ParseCase("a", nil), Outcome: report.Pass, Expected: report.Pass, Verdict: report.Expected}
	canary := report.Result{Case: report.ParseCase("b", nil), Outcome: report.Crash, Expected: report.Crash, Verdict: report.Expected}
	ns := report.Result{Case: report.ParseCase("c", nil), Outcome: report.Skip, Expected: report.Pass, Verdict: report.ExpectedFail, NotSupported: "no host atomics"}
	s := report.Summarize([]report.Result{pass, canary, ns}, "expectations/nvidia-sm_90-580", "out")
	if s.Verdict != "PASS" || s.ExitStatus != 0 {
		t.Fatalf("met run: %s exit %d", s.Verdict, s.ExitStatus)
	}
	if want := "p2patomics: PASS — 3 cases, 0 unexpected, 1 not supported (gate expectations/nvidia-sm_90-580)"; s.Line != want {
		t.Errorf("line %q, want %q", s.Line, want)
	}
	if len(s.NotSupported) != 1 || s.NotSupported[0].ID != "c" || s.ByOutcome[report.Crash] != 1 || s.ByVerdict[report.ExpectedFail] != 1 {
		t.Errorf("summary counts wrong: %+v", s)
	}
	reg := report.Result{Case: report.ParseCase("d", nil), Outcome: report.Crash, Expected: report.Pass, Verdict: report.Regression}
	s = report.Summarize([]report.Result{pass, reg}, "", "out")
	if want := "p2patomics: FAIL — 1 regression: d pass → crash (out/cases/d/)"; s.Line != want || s.ExitStatus != 1 {
		t.Errorf("line %q exit %d, want %q exit 1", s.Line, s.ExitStatus, want)
	}
	up := report.Result{Case: report.ParseCase("e", nil), Outcome: report.Pass, Expected: report.Pass, Baseline: report.Fail, Verdict: report.UnexpectedPass}
	s = report.Summarize([]report.Result{reg, up}, "", "out")
	if !strings.HasPrefix(s.Line, "p2patomics: FAIL — 2 unexpected (1 regression, 1 unexpected-pass): d pass → crash (out/cases/d/); e fail → pass") {
		t.Errorf("mixed line %q", s.Line)
	}
	// A litmus pass that lost its strong evidence: pass → pass says why.
	weak := report.Result{Case: report.ParseCase("g", nil), Outcome: report.Pass, Expected: report.Pass, Verdict: report.Regression, Evidence: report.EvidenceWeak}
	if s := report.Summarize([]report.Result{weak}, "x", "out"); !strings.Contains(s.Line, "g pass → pass (evidence weak, the baseline's strong)") {
		t.Errorf("evidence regression line %q", s.Line)
	}
	// Not yet judged results (verdict ""): an unmet outcome counts.
	raw := report.Result{Case: report.ParseCase("f", nil), Outcome: report.Fail, Expected: report.Pass}
	if s := report.Summarize([]report.Result{raw}, "", "o"); s.ExitStatus != 1 {
		t.Errorf("an unjudged unmet result must fail the run: %+v", s)
	}
}

// The JUnit checks below are the structure Jenkins' junit-10.xsd (xunit
// plugin) and GitLab's parser need: a <testsuites> root; every <testsuite>
// with name, tests, failures, errors, skipped, time, timestamp and hostname,
// counts that add up, <properties> before the test cases, <system-out> and
// <system-err> (one each) after them; every testcase
// with name, classname and time and its children in the order skipped?,
// error*, failure*, system-out*; failure and error with message and type.

type xTestsuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Attrs    []xml.Attr   `xml:",any,attr"`
	Suites   []xTestsuite `xml:"testsuite"`
	Children []xAny       `xml:",any"`
}
type xTestsuite struct {
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []xAny     `xml:",any"`
}
type xAny struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []xAny     `xml:",any"`
	Text     string     `xml:",chardata"`
}

func attr(as []xml.Attr, name string) (string, bool) {
	for _, a := range as {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// checkJUnit validates doc and returns the failure, error and skipped counts.
func checkJUnit(doc []byte) (failures, errors, skipped int, err error) {
	var probs []string
	bad := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	defer func() {
		if len(probs) > 0 {
			err = fmt.Errorf("%s", strings.Join(probs, "; "))
		}
	}()
	var root xTestsuites
	if err := xml.Unmarshal(doc, &root); err != nil {
		return 0, 0, 0, fmt.Errorf("junit: not XML with a <testsuites> root: %v", err)
	}
	if len(root.Suites) == 0 {
		return 0, 0, 0, fmt.Errorf("junit: no <testsuite>")
	}
	for _, s := range root.Suites {
		f, e, sk, err := checkSuite(s, bad)
		if err != nil {
			return 0, 0, 0, err
		}
		failures, errors, skipped = failures+f, errors+e, skipped+sk
	}
	for name, n := range map[string]int{"failures": failures, "errors": errors} {
		if v, _ := attr(root.Attrs, name); v != strconv.Itoa(n) {
			bad("junit: <testsuites> %s=%q, suites sum to %d", name, v, n)
		}
	}
	return failures, errors, skipped, nil
}

// checkSuite checks one <testsuite>: its attributes, <properties> before
// the cases, each case (checkCase), and counts that add up.
func checkSuite(s xTestsuite, bad func(string, ...any)) (f, e, sk int, err error) {
	for _, a := range []string{"name", "tests", "failures", "errors", "skipped", "time", "timestamp", "hostname"} {
		v, ok := attr(s.Attrs, a)
		if !ok || v == "" {
			return 0, 0, 0, fmt.Errorf("junit: <testsuite> lacks %s", a)
		}
	}
	if ts, _ := attr(s.Attrs, "timestamp"); func() error { _, err := time.Parse("2006-01-02T15:04:05", ts); return err }() != nil {
		bad("junit: timestamp %q is not xs:dateTime without zone", ts)
	}
	tests := 0
	seenCase, seenTail := false, map[string]bool{}
	for _, c := range s.Children {
		switch c.XMLName.Local {
		case "system-out", "system-err":
			if seenTail[c.XMLName.Local] || (c.XMLName.Local == "system-out" && seenTail["system-err"]) {
				bad("junit: <testsuite> <%s> twice or out of order", c.XMLName.Local)
			}
			seenTail[c.XMLName.Local] = true
		case "properties":
			if seenCase {
				bad("junit: <properties> after a <testcase>")
			}
			for _, p := range c.Children {
				if _, ok := attr(p.Attrs, "name"); !ok || p.XMLName.Local != "property" {
					bad("junit: bad property %v", p)
				}
				if _, ok := attr(p.Attrs, "value"); !ok {
					bad("junit: property without value %v", p)
				}
			}
		case "testcase":
			if len(seenTail) > 0 {
				bad("junit: <testcase> after the suite's system-out/system-err")
			}
			seenCase = true
			tests++
			cf, ce, csk, err := checkCase(c, bad)
			if err != nil {
				return 0, 0, 0, err
			}
			f, e, sk = f+cf, e+ce, sk+csk
		default:
			bad("junit: <testsuite> child <%s> not in junit-10.xsd", c.XMLName.Local)
		}
	}
	for name, n := range map[string]int{"tests": tests, "failures": f, "errors": e, "skipped": sk} {
		if v, _ := attr(s.Attrs, name); v != strconv.Itoa(n) {
			bad("junit: %s=%q but %d counted", name, v, n)
		}
	}
	return f, e, sk, nil
}

// checkCase checks one <testcase>: its attributes and its children, in
// junit-10.xsd's order, failure and error with message and type, skipped
// with a message.
func checkCase(c xAny, bad func(string, ...any)) (f, e, sk int, err error) {
	for _, a := range []string{"name", "classname", "time"} {
		if _, ok := attr(c.Attrs, a); !ok {
			return 0, 0, 0, fmt.Errorf("junit: testcase lacks %s", a)
		}
	}
	order := map[string]int{"skipped": 0, "error": 1, "failure": 2, "system-out": 3, "system-err": 4}
	last := -1
	for _, ch := range c.Children {
		o, ok := order[ch.XMLName.Local]
		if !ok {
			return 0, 0, 0, fmt.Errorf("junit: testcase child <%s> not in junit-10.xsd", ch.XMLName.Local)
		}
		if o < last {
			bad("junit: testcase children out of order at <%s>", ch.XMLName.Local)
		}
		last = o
		switch ch.XMLName.Local {
		case "failure", "error":
			for _, a := range []string{"message", "type"} {
				if _, ok := attr(ch.Attrs, a); !ok {
					bad("junit: <%s> lacks %s", ch.XMLName.Local, a)
				}
			}
			if ch.XMLName.Local == "failure" {
				f++
			} else {
				e++
			}
		case "skipped":
			if m, _ := attr(ch.Attrs, "message"); m == "" {
				bad("junit: <skipped> without a message")
			}
			sk++
		}
	}
	return f, e, sk, nil
}

func judged(results ...report.Result) *report.Report {
	rep := &report.Report{Schema: 1, Environment: report.EnvironmentOf(h200("0")), Results: results}
	s := report.Summarize(results, "expectations/nvidia-sm_90-580", "out")
	rep.Summary = &s
	return rep
}

func TestJUnitFollowsTheVerdict(t *testing.T) {
	expFail := report.Result{Case: report.ParseCase("cuda.vmm-host.counter.add", nil), Outcome: report.Fail, Expected: report.Pass, Verdict: report.ExpectedFail, Detail: "lost"}
	canary := report.Result{Case: report.ParseCase("cuda.vmm.canary.segv", nil), Outcome: report.Crash, Expected: report.Crash, Verdict: report.Expected}
	ns := report.Result{Case: report.ParseCase("cuda.vmm.cpugpu.add", nil), Outcome: report.Skip, Expected: report.Pass, Verdict: report.ExpectedFail, NotSupported: "HOST_NATIVE 0", Detail: "HOST_NATIVE 0"}
	pass := report.Result{Case: report.ParseCase("cuda.vmm.counter.add", nil), Outcome: report.Pass, Expected: report.Pass, Verdict: report.Expected}
	b, err := report.JUnit(judged(expFail, canary, ns, pass), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	f, e, s, err := checkJUnit(b)
	if err != nil {
		t.Fatal(err)
	}
	if f != 0 || e != 0 || s != 1 {
		t.Errorf("a gated run with expected failures: failures %d errors %d skipped %d, want 0 0 1\n%s", f, e, s, b)
	}
	for _, want := range []string{`<property name="driver" value="580.159.04">`, `<property name="gpus" value="2 x NVIDIA H200 (sm_90)">`,
		`<property name="commit" value="abc1234">`, `<property name="stack" value="arch=sm_90 driver=580.159.04 vendor=nvidia">`,
		"outcome=crash expected=crash"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("junit lacks %s", want)
		}
	}
	up := report.Result{Case: report.ParseCase("cuda.vmm.counter.up", nil), Outcome: report.Pass, Expected: report.Pass, Baseline: report.Fail, Verdict: report.UnexpectedPass}
	crash := report.Result{Case: report.ParseCase("cuda.vmm.counter.crash", nil), Outcome: report.Crash, Expected: report.Pass, Verdict: report.Regression}
	to := report.Result{Case: report.ParseCase("cuda.vmm.counter.to", nil), Outcome: report.Incomplete, Expected: report.Pass, Verdict: report.Regression}
	b, _ = report.JUnit(judged(pass, up, crash, to), time.Unix(0, 0))
	if f, e, _, err := checkJUnit(b); err != nil || f != 1 || e != 2 {
		t.Errorf("planted unexpected pass + crash + incomplete: failures %d errors %d (%v), want 1 and 2\n%s", f, e, err, b)
	}
}

// Issue 35 item 4: the run's world events are the suite's system-err, one
// a line, each with its kind, rank, pid and signal; a run without any has
// none. At ce5f99b junit.xml held no trace of a rank that crashed while its
// world started.
func TestJUnitCarriesWorldEvents(t *testing.T) {
	one := 1
	crash := report.Result{Case: report.ParseCase("host.memfd.counter.add", nil), Outcome: report.Crash, Expected: report.Pass, Verdict: report.NewFlake,
		Detail: "world start: rank 1 (pid 4242) killed by SIGSEGV before its hello"}
	rep := judged(crash)
	rep.WorldEvents = []report.WorldEvent{{Time: "2026-12-01T10:00:00Z", Kind: report.EventStartCrash, Ranks: 2, Rank: &one, Pid: 4242,
		Signal: "SIGSEGV", Case: crash.ID(), Detail: "rank 1 (pid 4242) killed by SIGSEGV before its hello"}}
	b, err := report.JUnit(rep, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, e, _, err := checkJUnit(b); err != nil || e != 1 {
		t.Fatalf("errors %d (%v), want 1\n%s", e, err, b)
	}
	want := "<system-err>world event: 2026-12-01T10:00:00Z start-crash rank 1 (pid 4242) SIGSEGV case host.memfd.counter.add: rank 1 (pid 4242) killed by SIGSEGV before its hello</system-err>"
	if !bytes.Contains(b, []byte(want)) {
		t.Errorf("junit lacks the world event %s\n%s", want, b)
	}
	rep.WorldEvents = nil
	if b, _ = report.JUnit(rep, time.Unix(0, 0)); bytes.Contains(b, []byte("system-err")) {
		t.Errorf("a run without world events has a system-err:\n%s", b)
	}
}

// TestCheckJUnitCatchesBadFiles shows the structural check fails on the
// shapes the old writer produced and on miscounts.
func TestCheckJUnitCatchesBadFiles(t *testing.T) {
	for name, doc := range map[string]string{
		"no errors attribute": `<testsuites failures="0" errors="0"><testsuite name="p" tests="0" failures="0" skipped="0" time="0" timestamp="2026-01-01T00:00:00" hostname="h"></testsuite></testsuites>`,
		"bare testsuite root": `<testsuite name="p" tests="0" failures="0" errors="0" skipped="0" time="0" timestamp="2026-01-01T00:00:00" hostname="h"></testsuite>`,
		"failure before skipped": `<testsuites failures="1" errors="0"><testsuite name="p" tests="1" failures="1" errors="0" skipped="1" time="0" timestamp="2026-01-01T00:00:00" hostname="h">` +
			`<testcase name="a" classname="c" time="0"><failure message="m" type="t"/><skipped message="s"/></testcase></testsuite></testsuites>`,
		"case after system-err": `<testsuites failures="0" errors="0"><testsuite name="p" tests="1" failures="0" errors="0" skipped="0" time="0" timestamp="2026-01-01T00:00:00" hostname="h">` +
			`<system-err>x</system-err><testcase name="a" classname="c" time="0"></testcase></testsuite></testsuites>`,
		"count mismatch": `<testsuites failures="0" errors="0"><testsuite name="p" tests="1" failures="0" errors="0" skipped="0" time="0" timestamp="2026-01-01T00:00:00" hostname="h">` +
			`<testcase name="a" classname="c" time="0"><failure message="m" type="t"/></testcase></testsuite></testsuites>`,
	} {
		if _, _, _, err := checkJUnit([]byte(doc)); err == nil {
			t.Errorf("%s: the structure check accepted it", name)
		}
	}
}

// results.csv and failures.csv in deqp-runner's shape: test,status,duration
// for every case; test,status for every case whose outcome is not its
// expected one (read back as a fails.txt by expect).
func TestWriteCSVs(t *testing.T) {
	rep := judged(
		report.Result{Case: report.ParseCase("a", nil), Outcome: report.Pass, Expected: report.Pass, Verdict: report.Expected, Duration: 0.5},
		report.Result{Case: report.ParseCase("b", nil), Outcome: report.Crash, Expected: report.Pass, Verdict: report.ExpectedFail},
		report.Result{Case: report.ParseCase("c", nil), Outcome: report.Pass, Expected: report.Pass, Baseline: report.Fail, Verdict: report.UnexpectedPass},
		report.Result{Case: report.ParseCase("d", nil), Outcome: report.Crash, Expected: report.Crash, Verdict: report.Expected},
		report.Result{Case: report.ParseCase("e", nil), Outcome: report.Skip, Expected: report.Pass, Verdict: report.Missing},
	)
	dir := t.TempDir()
	if err := report.WriteCSVs(dir, rep); err != nil {
		t.Fatal(err)
	}
	all, _ := os.ReadFile(filepath.Join(dir, "results.csv"))
	want := "a,Pass,0.500\nb,ExpectedFail,0.000\nc,UnexpectedPass,0.000\nd,Crash,0.000\ne,Missing,0.000\n"
	if string(all) != want {
		t.Errorf("results.csv:\n%s\nwant:\n%s", all, want)
	}
	fails, _ := os.ReadFile(filepath.Join(dir, "failures.csv"))
	if string(fails) != "b,Crash\n" {
		t.Errorf("failures.csv: %q, want only the case whose outcome is not its expected one", fails)
	}
}

// Issue 25 items 1 and 2: a new flake fails the verdict and is named with
// both attempts; known and allowed flakes are counted on a PASS line; an
// interrupted run is INTERRUPTED (exit 4) with its unfinished cases not
// run: junit <skipped>, never an error. Before: a flake was PASS with no
// word of it, and an interrupt was "FAIL — N regressions … → incomplete",
// junit errors="N".
func TestFlakesAndInterruptOnTheVerdict(t *testing.T) {
	r := func(id string, o report.Outcome, v report.Verdict) report.Result {
		return report.Result{Case: report.ParseCase(id, nil), Labels: []string{}, Outcome: o, Expected: report.Pass, Verdict: v, Ranks: []report.Rank{}}
	}
	nf := r("host.memfd.a.b", report.Crash, report.NewFlake)
	nf.Rerun = &report.Attempt{Outcome: report.Pass}
	s := report.Summarize([]report.Result{r("host.memfd.a.c", report.Pass, report.Expected), nf}, "g", "out")
	if s.Verdict != "FAIL" || s.ExitStatus != 1 || s.Line != "p2patomics: FAIL — 1 new-flake: host.memfd.a.b pass → crash, rerun pass (out/cases/host.memfd.a.b/)" {
		t.Errorf("new flake: %s %d %q", s.Verdict, s.ExitStatus, s.Line)
	}
	s = report.Summarize([]report.Result{r("host.memfd.a.c", report.Pass, report.Expected), r("host.memfd.a.b", report.Fail, report.KnownFlake), r("host.memfd.a.d", report.Fail, report.Flake)}, "g", "out")
	if s.ExitStatus != 0 || s.Line != "p2patomics: PASS — 3 cases, 0 unexpected, 1 known flake, 1 new flake allowed (--allow-new-flakes) (gate g)" {
		t.Errorf("known and allowed flakes: %d %q", s.ExitStatus, s.Line)
	}
	half := []report.Result{r("host.memfd.a.c", report.Pass, report.Expected), r("host.memfd.a.b", report.Incomplete, report.NotRun), r("host.memfd.a.d", report.Incomplete, report.NotRun)}
	s = report.SummarizeRun(half, "g", "out", "SIGINT")
	if s.Verdict != report.VerdictInterrupted || s.ExitStatus != report.ExitInterrupted || len(s.Unexpected) != 0 || len(s.NotRun) != 2 ||
		s.Line != "p2patomics: INTERRUPTED — 1 of 3 cases ran, 0 unexpected so far (SIGINT; gate g)" {
		t.Errorf("interrupted: %+v", s)
	}
	rep := &report.Report{Schema: report.Schema, Environment: report.Environment{}, Results: half, Summary: &s}
	b, err := report.JUnit(rep, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	// Issue 38 item 7: an interrupted run's junit.xml read green
	// (errors="0"); the run's own testcase carries the <error>.
	if !strings.Contains(string(b), `failures="0" errors="1" skipped="2"`) || !strings.Contains(string(b), `<property name="verdict" value="INTERRUPTED">`) ||
		!strings.Contains(string(b), `<error message="interrupted: exit 4" type="interrupted">`) {
		t.Errorf("junit of an interrupted run:\n%s", b)
	}
	if _, e, _, err := checkJUnit(b); err != nil || e != 1 {
		t.Errorf("junit of an interrupted run: %d errors (%v), want 1", e, err)
	}
}

// Issue 38 item 7: a run whose reports were not all written (exit 3)
// never records exit_status 0 nor ends on a PASS line, and its junit.xml,
// where written, carries an <error>; a PASS run has no run testcase.
func TestReportsNotWrittenIsNotAPass(t *testing.T) {
	pass := report.Result{Case: report.ParseCase("cuda.vmm.counter.add", nil), Outcome: report.Pass, Expected: report.Pass, Verdict: report.Expected}
	rep := judged(pass)
	if b, _ := report.JUnit(rep, time.Unix(0, 0)); bytes.Contains(b, []byte("p2patomics.run")) {
		t.Errorf("a PASS run has a run testcase:\n%s", b)
	}
	rep.Summary.ReportsNotWritten("heatmaps: no space left on device")
	if s := rep.Summary; s.ExitStatus != 3 || strings.HasPrefix(s.Line, "p2patomics: PASS") ||
		s.Line != "p2patomics: REPORTS NOT WRITTEN (exit 3: heatmaps: no space left on device); the cases: PASS — 1 case, 0 unexpected (gate expectations/nvidia-sm_90-580)" {
		t.Errorf("reports not written: exit %d, line %q", s.ExitStatus, s.Line)
	}
	b, _ := report.JUnit(rep, time.Unix(0, 0))
	if _, e, _, err := checkJUnit(b); err != nil || e != 1 || !bytes.Contains(b, []byte(`type="reports-not-written"`)) {
		t.Errorf("junit of an exit-3 run: %d errors (%v), want 1 reports-not-written\n%s", e, err, b)
	}
}
