package expect

import (
	"fmt"
	"slices"
	"sort"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// JudgeMetrics is the perf gate's judge: it decides every perf.txt line whose case ran in results (the last
// result of an id wins: a rerun). reruns holds, per Line.Key, the medians
// of re-measurements in fresh worlds (nil: none were made, as when a
// recorded run is judged again offline). baseline names f in the summary.
//
// A metric whose median is worse than its limit is flagged; then
//
//   - with reruns: the median of this run's and the reruns' medians
//     decides: still worse → perf-regression (confirmed), else perf-noise
//     (a one-off world; reported). Never retried until it passes: the
//     reruns are fixed in number before they are seen.
//   - without: when at least two samples meet the limit the samples
//     straddle it (two placement modes inside one run: the vmm-host spread
//     atomics' 2540/3665 alternation, a copy that read 1698 GB/s once
//     among 1732-1841) → perf-unstable (reported, its spread shown);
//     otherwise perf-regression, marked unconfirmed — an offline judge
//     cannot re-measure, and a gate that passed what it could not check
//     would be no gate.
//
// A metric better than the band's far edge by more than its tolerance is
// perf-improvement (the baseline is stale; reported). Better and worse
// are the line's op, which recorded the metric's declared direction; the
// unit is never read for it. A line whose case passed without the metric
// (or with another unit, or declared the other way now) is perf-missing. A
// line whose case did not pass is left to the correctness verdict.
func JudgeMetrics(f *perf.File, results []report.Result, reruns map[string][]float64, baseline string) *report.PerfSummary {
	last := map[string]report.Result{}
	for _, r := range results {
		last[r.ID()] = r
	}
	p := &report.PerfSummary{Baseline: baseline, Findings: []report.PerfFinding{}}
	for _, l := range f.Lines {
		r, ran := last[l.ID]
		if !ran {
			continue
		}
		if r.Outcome != report.Pass {
			// Left to the correctness verdict, which already fails it (the
			// physics floor makes a too-slow copy a fail): judged for speed
			// too it read "unconfirmed: no re-measurement recorded" beside
			// "rerun fail", as if nothing had been re-measured.
			continue
		}
		m, has := r.Metrics[l.Metric]
		if !has || m.Unit != l.Unit || m.Direction() != l.Better() {
			p.Gated++
			p.Findings = append(p.Findings, missing(l, m, has))
			p.Bands = append(p.Bands, bandOf(l, 0, report.PerfMissing))
			continue
		}
		p.Gated++
		if l.Insensitive() {
			p.Insensitive++
		}
		if fd, ok := judgeOne(l, m, reruns[l.Key()]); ok {
			p.Findings = append(p.Findings, fd)
			p.Bands = append(p.Bands, bandOf(l, m.Median, fd.Verdict))
		} else {
			p.InBand++
			p.Bands = append(p.Bands, bandOf(l, m.Median, report.InBand))
		}
	}
	sort.SliceStable(p.Findings, func(i, j int) bool { return rank(p.Findings[i].Verdict) < rank(p.Findings[j].Verdict) })
	return p
}

// judgeOne is one line's finding; false when the metric is in band.
func judgeOne(l perf.Line, m report.Metric, rr []float64) (report.PerfFinding, bool) {
	dir := float64(l.Better().Sign())
	worse := func(v float64) bool { return Worse(l.Better(), v, l.Limit) }
	was := l.Lo
	if dir < 0 {
		was = l.Hi
	}
	fd := report.PerfFinding{ID: l.ID, Metric: l.Metric, Unit: l.Unit, Was: was, Now: m.Median, Op: l.Op, Limit: l.Limit, Lo: l.Lo, Hi: l.Hi}
	if was != 0 {
		fd.Percent = (m.Median - was) / was * 100
	}
	band := fmt.Sprintf("band %s..%s over %d runs, tol %.0f%%", perf.Num(l.Lo), perf.Num(l.Hi), l.Runs, l.Tol*100)
	if !worse(m.Median) {
		far := l.Hi * (1 + l.Tol)
		if dir < 0 {
			far = l.Lo * (1 - l.Tol)
		}
		if dir*(m.Median-far) > 0 {
			fd.Verdict, fd.Detail = report.PerfImprovement, band+": better than the band by more than its tolerance; the baseline is stale, re-record it"
			return fd, true
		}
		return fd, false
	}
	if len(rr) > 0 {
		fd.Reruns = rr
		all := append([]float64{m.Median}, rr...)
		if mid := perf.Median(all); worse(mid) {
			fd.Verdict, fd.Confirmed = report.PerfRegression, true
			fd.Detail = fmt.Sprintf("%s; median of this run and %d reruns in fresh worlds %s is past the limit", band, len(rr), perf.Num(mid))
		} else {
			fd.Verdict = report.PerfNoise
			fd.Detail = fmt.Sprintf("%s; median of this run and %d reruns in fresh worlds %s meets the limit: one slow world", band, len(rr), perf.Num(mid))
		}
		return fd, true
	}
	meet := 0
	for _, s := range m.Samples {
		if !worse(s) {
			meet++
		}
	}
	if meet >= 2 {
		fd.Verdict = report.PerfUnstable
		fd.Detail = fmt.Sprintf("%s; %d of %d samples (%s–%s) meet the limit: the samples straddle it, so the median is not one mode's", band, meet, len(m.Samples), perf.Num(m.Min), perf.Num(m.Max))
		return fd, true
	}
	fd.Verdict = report.PerfRegression
	fd.Detail = band + "; no re-measurement recorded (unconfirmed)"
	return fd, true
}

func missing(l perf.Line, m report.Metric, has bool) report.PerfFinding {
	fd := report.PerfFinding{ID: l.ID, Metric: l.Metric, Verdict: report.PerfMissing, Unit: l.Unit, Op: l.Op, Limit: l.Limit, Lo: l.Lo, Hi: l.Hi}
	fd.Detail = "the case passed without this metric"
	switch {
	case has && m.Unit != l.Unit:
		fd.Detail = fmt.Sprintf("the metric is in %s now, %s in the baseline", m.Unit, l.Unit)
	case has:
		fd.Detail = fmt.Sprintf("the metric is declared %s-is-better now, %s-is-better in the baseline: re-record it", m.Direction().Words(), l.Better().Words())
	}
	return fd
}

func rank(v report.Verdict) int {
	return slices.Index([]report.Verdict{report.PerfRegression, report.PerfMissing, report.PerfUnstable, report.PerfNoise, report.PerfImprovement}, v)
}

func bandOf(l perf.Line, now float64, verdict report.Verdict) report.PerfBand {
	return report.PerfBand{ID: l.ID, Metric: l.Metric, Unit: l.Unit, Now: now, Op: l.Op, Limit: l.Limit, Lo: l.Lo, Hi: l.Hi, Verdict: verdict}
}
