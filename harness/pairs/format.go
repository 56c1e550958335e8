package pairs

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"p2patomics/harness/report"
)

// Format prints a value with three significant digits or more for large
// numbers (396, 39.6, 3.96, 0.396, 0.0396).
func Format(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case a >= 100 || a == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return trimZeros(strconv.FormatFloat(v, 'f', 1, 64))
	case a >= 1:
		return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Spread says how far a metric's samples ranged: "min–max", "min = max"
// when they agree to the printed digits, "n=1" for a single sample.
func Spread(m report.Metric) string {
	lo, hi := Format(m.Min), Format(m.Max)
	switch {
	case m.N == 1:
		return "n=1"
	case lo == hi:
		return fmt.Sprintf("min = max (n=%d)", m.N)
	}
	return lo + "–" + hi
}
