package stream

import (
	"fmt"
	"sync"
	"time"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
)

// Judged judges a recorded run as it is replayed, by the suite's judge
// (harness/expect: outcomes and metrics alike) with the suite's rules for
// a recorded run (expect.JudgeReport, Rejudge's baseline or the recorded
// verdicts, each re-checked against its outcomes by expect.Recheck): on RunDone it judges the report in place, so a sink fed after
// it (Reports) writes the judged run. It counts the CaseDone events it
// was fed: a replay that carried fewer results than the record holds is
// an error, never a verdict over the ones that came. The offline tools
// (p2preport, p2pcompare, p2pfleet) judge every run they read through it.
type Judged struct {
	Rejudge expect.Rejudge

	mu    sync.Mutex
	cases int
	done  bool
	err   error
}

// Handle counts CaseDone and judges RunDone's report.
func (j *Judged) Handle(e Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch d := e.(type) {
	case CaseDone:
		j.cases++
	case RunDone:
		j.done = true
		if n := len(d.Report.Results); j.cases != n {
			j.err = fmt.Errorf("the stream carried %d results, the record holds %d: not judged", j.cases, n)
			return
		}
		j.err = expect.JudgeReport(d.Report, j.Rejudge)
	}
}

// Err is the judgement's error (a refused baseline, a short stream); it
// says so when no RunDone came, since then nothing was judged.
func (j *Judged) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.done {
		return fmt.Errorf("the run never ended (no RunDone): not judged")
	}
	return j.err
}

// JudgeRecord replays rep (recorded, started at start) through a Judged
// sink of o and then through sinks: rep is judged in place first, and the
// sinks see the judged run. The baseline's refusals (o.Check) come before
// anything is judged or handed to a sink.
func JudgeRecord(rep *report.Report, start time.Time, o expect.Rejudge, sinks ...Sink) error {
	if err := o.Check(rep); err != nil {
		return err
	}
	j := &Judged{Rejudge: o}
	Replay(rep, start, append([]Sink{j}, sinks...)...)
	return j.Err()
}
