package ab

import "math"

// Level is the confidence level of every paired interval.
const Level = 0.95

// Paired is the paired test of one metric over blocks: the per-block
// ratios B/A are compared on a log scale (a ratio is symmetric there: a
// halving and a doubling are the same distance from 1), their mean and its
// Student-t interval at Level turned back into a change (B against A, as a
// fraction). With fewer than two ratios there is no interval: ok is false.
func Paired(ratios []float64) (change, low, high float64, ok bool) {
	n := 0
	var sum float64
	for _, r := range ratios {
		if r > 0 && !math.IsInf(r, 0) && !math.IsNaN(r) {
			sum += math.Log(r)
			n++
		}
	}
	if n < 2 || n != len(ratios) {
		return 0, 0, 0, false
	}
	mean := sum / float64(n)
	var ss float64
	for _, r := range ratios {
		d := math.Log(r) - mean
		ss += d * d
	}
	se := math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	h := tQuantile975(n-1) * se
	return math.Exp(mean) - 1, math.Exp(mean-h) - 1, math.Exp(mean+h) - 1, true
}

// tQuantile975 is Student's t 0.975 quantile for df degrees of freedom
// (the two-sided 95 % interval); the table to 30, then the normal's.
func tQuantile975(df int) float64 {
	t := []float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df >= 1 && df < len(t) {
		return t[df]
	}
	return 1.960
}

// Decide is the verdict of a paired change against a minimum effect tol
// (a fraction) for a metric whose better direction has sign (+1 higher, -1
// lower): a regression when the whole interval is worse than tol, an
// improvement when it is wholly better than tol, else no difference. A
// minimum effect keeps a real but harmless change (a 1 % shift measured
// tightly) from failing a run, and the interval keeps noise from doing so.
func Decide(low, high, tol float64, sign int) string {
	switch {
	case sign > 0 && high < -tol, sign < 0 && low > tol:
		return "perf-regression"
	case sign > 0 && low > tol, sign < 0 && high < -tol:
		return "perf-improvement"
	}
	return "no-difference"
}
