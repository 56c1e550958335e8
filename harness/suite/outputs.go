package suite

import (
	"fmt"
	"io"
	"os"

	"p2patomics/harness/report"
)

// live prints a case's line as it finishes.
func (r *Run) live(res report.Result) {
	r.mu.Lock()
	r.done++
	n := r.done
	r.mu.Unlock()
	if r.gate != nil {
		// Gated, "expected" is what the baseline recorded, the outcome the
		// verdict is judged against, not the spec's own expectation.
		res.Expected = r.gate.Baseline(res)
	}
	fmt.Fprintln(r.stdout(), report.LiveLine(r.Style, n, len(r.planned), res))
}

func (r *Run) stdout() io.Writer {
	if r.Stdout != nil {
		return r.Stdout
	}
	return os.Stdout
}
