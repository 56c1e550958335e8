package expect

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"p2patomics/harness/fingerprint"
	"p2patomics/harness/report"
)

// DefaultReason heads fails.txt entries that neither the old file nor the
// caller explained.
const DefaultReason = "recorded by --update-expectations; explain why and link the bug"

// Dir is the expectation folder for a run's stack under root
// (root/<vendor>-<arch>-<driverline>, e.g. expectations/nvidia-sm_90-580,
// expectations/host-amd64).
func Dir(root string, env map[string]any) string {
	return filepath.Join(root, fingerprint.Folder(fingerprint.Stack(env)))
}

// WriteBaseline records rep as the baseline in dir (--update-expectations):
//
//   - fails.txt: every case whose outcome differs from its expected, grouped
//     under its reason: the reason already in dir/fails.txt for that id if
//     the id is still listed, else reasons[id], else DefaultReason. Cases
//     matching dir's flakes.txt or skips.txt are left out, and so are
//     "missing" entries (they did not run).
//   - cases.txt: every case id that ran, sorted.
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	old := NewSet()
	for _, k := range []string{FailsFile, FlakesFile, SkipsFile} {
		p := filepath.Join(dir, k)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := old.loadFile(p, k); err != nil {
			return err
		}
	}
	st := fingerprint.Stack(rep.Environment)
	hdr := map[string]string{"vendor": st["vendor"], "arch": st["arch"]}
	if st["vendor"] != "host" && st["driver"] != "" {
		hdr["driver"] = fingerprint.DriverLine(st["vendor"], st["driver"])
	}
	for k, v := range hdr {
		if v == "" {
			delete(hdr, k)
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			// The header is one line of the baseline: a newline in a
			// recorded environment field would add lines (entries) to it.
			return fmt.Errorf("results.json: environment %s %s holds a control character: not written into a baseline", k, strconv.Quote(v))
		}
	}
	header := ""
	if len(hdr) > 0 {
		header = "# stack: " + FormatStack(hdr) + "\n"
	}

	groups := map[string][]string{}
	var ids, strong []string
	seen := map[string]bool{}
	for _, r := range rep.Results {
		if r.Verdict == report.Missing || seen[r.ID] {
			continue
		}
		seen[r.ID] = true
		ids = append(ids, r.ID)
		if r.Outcome == report.Pass && r.Evidence == report.EvidenceStrong {
			strong = append(strong, r.ID)
		}
		if r.Outcome == r.Expected {
			continue
		}
		if _, ok := old.Flaky(r.ID); ok {
			continue
		}
		if _, ok := old.Skipped(r.ID); ok {
			continue
		}
		why := ""
		if _, listed := old.Fails[r.ID]; listed {
			why = old.Reasons[r.ID]
		}
		if why == "" {
			why = oneLine(reasons[r.ID])
		}
		if why == "" {
			why = DefaultReason
		}
		groups[why] = append(groups[why], fmt.Sprintf("%s,%s", r.ID, r.Outcome))
	}
	sort.Strings(ids)

	var fails bytes.Buffer
	fails.WriteString(header)
	fails.WriteString("# Cases whose outcome differs from what the spec expects on this stack.\n")
	fails.WriteString("# Format: case-id,outcome under a \"# reason\" comment (a bug link belongs there).\n")
	whys := make([]string, 0, len(groups))
	for w := range groups {
		whys = append(whys, w)
	}
	sort.Strings(whys)
	for _, w := range whys {
		lines := groups[w]
		sort.Strings(lines)
		fmt.Fprintf(&fails, "\n# %s\n", w)
		for _, l := range lines {
			fails.WriteString(l + "\n")
		}
	}

	var cases bytes.Buffer
	cases.WriteString(header)
	cases.WriteString("# Every case id the baseline ran; one absent from a gated run is \"missing\".\n")
	for _, id := range ids {
		cases.WriteString(id + "\n")
	}

	if err := writeAtomic(filepath.Join(dir, FailsFile), fails.Bytes()); err != nil {
		return err
	}
	sort.Strings(strong)
	ev := filepath.Join(dir, EvidenceFile)
	if len(strong) == 0 {
		// Nothing to hold this stack to: no file (an old one would hold it
		// to kills this run no longer shows).
		if err := os.Remove(ev); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("expectations: %w", err)
		}
	} else {
		var b bytes.Buffer
		b.WriteString(header)
		b.WriteString("# Mutation-scored cases whose pass had strong evidence (a mutant showed its weak outcome);\n")
		b.WriteString("# a later pass of one without it is a regression (docs/LITMUS.md).\n")
		for _, id := range strong {
			b.WriteString(id + "\n")
		}
		if err := writeAtomic(ev, b.Bytes()); err != nil {
			return err
		}
	}
	return writeAtomic(filepath.Join(dir, CasesFile), cases.Bytes())
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// writeAtomic writes an expectation file the way the reports are written
// (report.WriteAtomic: synced temp file, rename, none left on failure).
func writeAtomic(path string, b []byte) error {
	if err := report.WriteAtomic(path, b); err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	return nil
}
