package stream

import (
	"time"

	"p2patomics/harness/expect"
	"p2patomics/harness/report"
)

// JudgeRecord judges a recorded run (rep, started at start) by the
// suite's judge (harness/expect: outcomes and metrics alike) with the
// suite's rules for a recorded run (expect.JudgeReport: Rejudge's baseline
// or the recorded verdicts, each re-checked against its outcomes by
// expect.Recheck), then replays the judged run through sinks. The
// judgement is a function before the replay, not a sink that rewrites the
// report for the sinks after it: the baseline's refusals (o.Check) and a
// judgement's error come before any sink sees the run. The offline tools
// (p2preport, p2pcompare, p2pfleet) judge every run they read this way.
func JudgeRecord(rep *report.Report, start time.Time, o expect.Rejudge, sinks ...Sink) error {
	if err := o.Check(rep); err != nil {
		return err
	}
	if err := expect.JudgeReport(rep, o); err != nil {
		return err
	}
	Replay(rep, start, sinks...)
	return nil
}
