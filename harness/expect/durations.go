package expect

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"p2patomics/harness/perf"
	"p2patomics/harness/report"
)

// DurationsFile is the case durations a baseline recorded: "<id> <seconds>"
// a line, the longest attempt (the run's and its rerun's) of every case
// that ran the way it was meant to (a pass, or the outcome it expects).
// A gated run gives each case in it a budget of max(2 s, 10× seconds)
// times the run's own pace against the baseline, never above the case's
// own (harness.Runner.Recorded): past it, a case whose ranks still move
// runs on up to its own limit, one that stopped is a timeout, so a wedged
// call costs a multiple of the healthy case (docs/GATING.md, "Case
// deadlines from the baseline").
const DurationsFile = "durations.txt"

// durationsText is durations.txt for results, under header; nil when no
// case qualifies. keep (the folder's durations.txt, when its perf
// baselines are for other cards too: otherCards) stays in it, each case
// the longer of keep's and this run's: one durations.txt times every card
// the folder serves.
func durationsText(header string, results []report.Result, keep map[string]float64, others []string) []byte {
	longest := map[string]float64{}
	for id, d := range keep {
		longest[id] = d
	}
	for _, r := range results {
		if r.Outcome != report.Pass && r.Outcome != r.Expected || r.Outcome == report.Skip || r.Outcome == report.NotRunOutcome {
			continue // a skip, a setup error or a crash is no measure of the case's run
		}
		d := r.Duration
		if r.Rerun != nil {
			d = max(d, r.Rerun.Duration)
		}
		if d >= 0 && !math.IsInf(d, 0) && !math.IsNaN(d) {
			longest[r.ID()] = max(longest[r.ID()], d)
		}
	}
	if len(longest) == 0 {
		return nil
	}
	ids := make([]string, 0, len(longest))
	for id := range longest {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("# Seconds each case took when recorded (its longest attempt); a gated run's budget is max(2 s, 10x) times its pace, longer while the case moves.\n")
	if len(keep) > 0 {
		fmt.Fprintf(&b, "# Each case the longest of this run and the durations.txt before it: the folder also serves %s.\n", strings.Join(others, ", "))
	}
	for _, id := range ids {
		fmt.Fprintf(&b, "%s %s\n", id, strconv.FormatFloat(longest[id], 'f', 3, 64))
	}
	return b.Bytes()
}

// otherCards is what a baseline recorded into dir on env's GPUs keeps of
// the durations.txt already there: when one of dir's perf baselines is for
// other GPUs (its scope does not hold env's; perf.CheckScope), that
// card's cases were timed there too, so the old durations stay (each case
// the longer of either, durationsText) and others names those files; nil
// when every perf file there is this card's, or there is none (the new
// run's durations replace the old, as before a folder served several
// cards).
func otherCards(dir string, env report.Environment) (keep map[string]float64, others []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("expectations: %w", err)
	}
	for _, e := range ents {
		if folderKind(e.Name()) != PerfFile || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := report.ReadRegular(path, 16<<20)
		if err != nil {
			return nil, nil, fmt.Errorf("expectations: %w", err)
		}
		f, err := perf.Parse(path, b)
		if err != nil {
			return nil, nil, err
		}
		if perf.CheckScope(f, env) != nil {
			others = append(others, fmt.Sprintf("%s (%s)", e.Name(), f.Scope))
		}
	}
	if len(others) == 0 {
		return nil, nil, nil
	}
	path := filepath.Join(dir, DurationsFile)
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		return nil, nil, nil
	}
	old := NewSet()
	if err := old.loadDurations(path); err != nil {
		return nil, nil, err
	}
	return old.Durations, others, nil
}

// loadDurations reads a durations.txt into s.Durations: a "# stack:"
// header joins the others; every other line is "<id> <seconds>", an id
// once, seconds a finite number of at least 0.
func (s *Set) loadDurations(path string) error {
	b, err := report.ReadRegular(path, 16<<20)
	if err != nil {
		return fmt.Errorf("expectations: %w", err)
	}
	s.Sources = append(s.Sources, path)
	if s.Durations == nil {
		s.Durations = map[string]float64{}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		at, line := fmt.Sprintf("%s:%d", path, n), strings.TrimSpace(sc.Text())
		if rest, ok := cutPrefixFold(strings.TrimSpace(strings.TrimPrefix(line, "#")), "stack:"); ok && strings.HasPrefix(line, "#") {
			if err := s.addStack(at, rest); err != nil {
				return err
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || !idRe.MatchString(f[0]) {
			return fmt.Errorf("%s: want \"<case id> <seconds>\"", at)
		}
		d, err := strconv.ParseFloat(f[1], 64)
		if err != nil || d < 0 || math.IsInf(d, 0) || math.IsNaN(d) {
			return fmt.Errorf("%s: seconds %q: want a number of at least 0", at, f[1])
		}
		if _, dup := s.Durations[f[0]]; dup {
			return fmt.Errorf("%s: %s given twice", at, f[0])
		}
		s.Durations[f[0]] = d
	}
	return sc.Err()
}
