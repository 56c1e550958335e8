package suite

import (
	"path/filepath"
	"strings"

	"p2patomics/harness/report"
)

// gateFlags is the gate's flags every printed repro carries (the inline
// `repro:` line on stdout, results.json's repro, summary.txt, junit's
// system-out, report.html and repro.sh): --expectations with its paths
// made absolute (a repro runs from any directory) and the --allow-* flags
// that changed the verdict; "" for a run that is not gated (ungated, or
// recording a baseline: gateSet's rule). Without them an unexpected pass
// or a not-run regression re-run as printed read PASS against the specs'
// own expectations (issue 49 U5). It takes the flags' values, not Options,
// so that options.go (Repro) and plan.go (reproGate) both use it from
// below (docs/ARCHITECTURE.md: one-way floors).
func gateFlags(expectations string, update, allowStack, allowFlakes bool) string {
	if expectations == "" || update {
		return ""
	}
	var abs []string
	for _, e := range strings.Split(expectations, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if a, err := filepath.Abs(e); err == nil {
			e = a
		}
		abs = append(abs, e)
	}
	if len(abs) == 0 {
		return ""
	}
	flags := "--expectations=" + report.ShellQuote(strings.Join(abs, ","))
	if allowStack {
		flags += " --allow-stack-mismatch"
	}
	if allowFlakes {
		flags += " --allow-new-flakes"
	}
	return flags
}
