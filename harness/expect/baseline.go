package expect

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/internal/safefile"
)

// DefaultReason heads fails.txt entries that neither the old file nor the
// caller explained.
const DefaultReason = "recorded by --update-expectations; explain why and link the bug"

// Dir is the expectation folder for a run's stack under root
// (root/<vendor>-<arch>-<driverline>, e.g. expectations/nvidia-sm_90-580,
// expectations/host-amd64).
func Dir(root string, env report.Environment) string {
	return filepath.Join(root, report.Folder(env.Stack()))
}

// WriteBaseline records rep as the baseline in dir (--update-expectations):
//
//   - fails.txt: every case whose outcome differs from its expected, grouped
//     under its reason: the reason already in dir/fails.txt for that id if
//     the id is still listed, else reasons[id], else DefaultReason. Cases
//     matching dir's flakes.txt or skips.txt are left out, and so are
//     "missing" entries (they did not run).
//   - cases.txt: every case id that ran, sorted.
//   - durations.txt: the seconds each case took (DurationsFile), the
//     gated run's deadlines; where dir's perf baselines are for other
//     cards too, each case the longer of this run's and the old file's
//     (otherCards).
//   - flakes.txt and skips.txt are kept as they are.
//
// Both written files start with "# stack: vendor=… arch=… driver=<line>"
// from rep.Environment (host: vendor and arch only). Files are replaced
// atomically; an unreadable or malformed existing file is an error, so a
// typo never silently drops its reasons.
func WriteBaseline(dir string, rep *report.Report, reasons map[string]string) error {
	// An id or outcome with a newline would become a line of its own in
	// fails.txt: the writer refuses an invalid report, wherever it came
	// from (the suite's --update-expectations, p2pbaseline).
	if err := rep.Validate(); err != nil {
		return fmt.Errorf("expectations: not writing from an invalid report: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	// Nobody but this user or root may be able to redirect the folder
	// (internal/safefile, the suite's --out rule), checked before it is
	// made and again after: issue 49 B6 wrote cases.txt, fails.txt and
	// durations.txt into the target of another user's symlink.
	if err := safefile.Ancestors(safeName, filepath.Join(dir, CasesFile)); err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	if err := safefile.Ancestors(safeName, filepath.Join(dir, CasesFile)); err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	old, err := loadDir(dir)
	if err != nil {
		return err
	}
	header, err := stackHeader(rep.Environment)
	if err != nil {
		return err
	}
	b := record(rep.Results, old, reasons)
	if err := writeAtomic(filepath.Join(dir, FailsFile), b.failsText(header)); err != nil {
		return err
	}
	if err := writeEvidence(filepath.Join(dir, EvidenceFile), header, b.strong); err != nil {
		return err
	}
	keep, others, err := otherCards(dir, rep.Environment)
	if err != nil {
		return err
	}
	if d := durationsText(header, rep.Results, keep, others); d != nil {
		if err := writeAtomic(filepath.Join(dir, DurationsFile), d); err != nil {
			return err
		}
	} else if err := os.Remove(filepath.Join(dir, DurationsFile)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("expectations: %w", err) // an old one would time this run's cases by another's
	}
	return writeAtomic(filepath.Join(dir, CasesFile), b.casesText(header))
}

// loadDir reads dir's existing fails, flakes and skips (what the new
// baseline keeps reasons and exclusions from); a file that is not there
// is none, one that does not parse is an error.
func loadDir(dir string) (*Set, error) {
	old := NewSet()
	for _, k := range []string{FailsFile, FlakesFile, SkipsFile} {
		p := filepath.Join(dir, k)
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if !fi.Mode().IsRegular() {
			// As Load: never read through a link, never a folder.
			return nil, fmt.Errorf("expectations: %s is not a regular file (%s): put the file itself there", strconv.Quote(p), fi.Mode().Type())
		}
		if err := old.loadFile(p, k); err != nil {
			return nil, err
		}
	}
	return old, nil
}

// stackHeader is the "# stack: ..." line the written files start with,
// from env ("" when env names no stack). A control character in a field
// is an error: the header is one line of the baseline, and a newline in a
// recorded environment field would add lines (entries) to it.
func stackHeader(env report.Environment) (string, error) {
	st := env.Stack()
	hdr := map[string]string{"vendor": st["vendor"], "arch": st["arch"]}
	if !backends.Driverless(st["vendor"]) && st["driver"] != "" {
		hdr["driver"] = report.DriverLine(st["vendor"], st["driver"])
	}
	for k, v := range hdr {
		if v == "" {
			delete(hdr, k)
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "", fmt.Errorf("results.json: environment %s %s holds a control character: not written into a baseline", k, strconv.Quote(v))
		}
	}
	if len(hdr) == 0 {
		return "", nil
	}
	return "# stack: " + FormatStack(hdr) + "\n", nil
}

// baseline is what a run records: every id that ran (sorted), the
// strong-evidence passes, and the fails.txt lines under their reasons.
type baseline struct {
	ids, strong []string
	groups      map[string][]string // reason -> "id,outcome"
}

// record sorts results into a baseline. A case whose outcome is its
// expected one, or that old lists as flaky or skipped, is no fails.txt
// entry; a "missing" entry did not run and is none of the three.
func record(results []report.Result, old *Set, reasons map[string]string) baseline {
	b := baseline{groups: map[string][]string{}}
	seen := map[string]bool{}
	for _, r := range results {
		if r.Verdict == report.Missing || seen[r.ID()] {
			continue
		}
		seen[r.ID()] = true
		b.ids = append(b.ids, r.ID())
		if r.Outcome == report.Pass && r.Evidence == report.EvidenceStrong {
			b.strong = append(b.strong, r.ID())
		}
		if r.OutcomeIs(r.Expected) {
			continue
		}
		if _, ok := old.Flaky(r.ID()); ok {
			continue
		}
		if _, ok := old.Skipped(r.ID()); ok {
			continue
		}
		why := reasonFor(r.ID(), old, reasons)
		b.groups[why] = append(b.groups[why], fmt.Sprintf("%s,%s", r.ID(), recorded(r)))
	}
	sort.Strings(b.ids)
	sort.Strings(b.strong)
	return b
}

// recorded is the outcome a fails.txt row holds for r: a case judged
// without running holds the outcome of the case it was judged from (the
// one outcome judgeNotRun lets it meet), since a baseline never expects a
// case not to run.
func recorded(r report.Result) report.Outcome {
	if r.Outcome == report.NotRunOutcome && r.JudgedFrom != nil {
		return r.JudgedFrom.Outcome
	}
	return r.Outcome
}

// reasonFor is the reason a fails.txt entry goes under: the one already in
// the old fails.txt while the id is listed there, else the caller's, else
// DefaultReason.
func reasonFor(id string, old *Set, reasons map[string]string) string {
	why := ""
	if _, listed := old.Fails[id]; listed {
		why = old.Reasons[id]
	}
	if why == "" {
		why = oneLine(reasons[id])
	}
	if why == "" {
		why = DefaultReason
	}
	return why
}

// failsText is fails.txt: the header, then each reason (sorted) over its
// entries (sorted).
func (b baseline) failsText(header string) []byte {
	var fails bytes.Buffer
	fails.WriteString(header)
	fails.WriteString("# Cases whose outcome differs from what the spec expects on this stack.\n")
	fails.WriteString("# Format: case-id,outcome under a \"# reason\" comment (a bug link belongs there).\n")
	whys := make([]string, 0, len(b.groups))
	for w := range b.groups {
		whys = append(whys, w)
	}
	sort.Strings(whys)
	for _, w := range whys {
		lines := b.groups[w]
		sort.Strings(lines)
		fmt.Fprintf(&fails, "\n# %s\n", w)
		for _, l := range lines {
			fails.WriteString(l + "\n")
		}
	}
	return fails.Bytes()
}

// casesText is cases.txt: the header, then every id that ran.
func (b baseline) casesText(header string) []byte {
	var cases bytes.Buffer
	cases.WriteString(header)
	cases.WriteString("# Every case id the baseline ran; one absent from a gated run is \"missing\".\n")
	for _, id := range b.ids {
		cases.WriteString(id + "\n")
	}
	return cases.Bytes()
}

// writeEvidence writes the strong-evidence list to path, or removes the
// file when there is none: an old one would hold the stack to kills this
// run no longer shows.
func writeEvidence(path, header string, strong []string) error {
	if len(strong) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("expectations: %w", err)
		}
		return nil
	}
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("# Mutation-scored cases whose pass had strong evidence (a mutant showed its weak outcome);\n")
	b.WriteString("# a later pass of one without it is a regression (docs/LITMUS.md).\n")
	for _, id := range strong {
		b.WriteString(id + "\n")
	}
	return writeAtomic(path, b.Bytes())
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// safeName is what a refusal calls an expectation file being written.
const safeName = "the expectation file"

// writeAtomic writes an expectation file by the suite's --out rule
// (internal/safefile: no folder on the way another user could redirect,
// never through a link at path, a synced temp file renamed over it, none
// left on failure).
func writeAtomic(path string, b []byte) error {
	if err := safefile.WriteFile(safeName, path, b, 0o644); err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	return nil
}
