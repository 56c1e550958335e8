package report

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Case is a case's identity, typed: the backend and allocation kind it ran
// on, its spec family and variant, its world size and, for a per-pair
// case, the ordered pair of ranks it measures. The id is derived from these
// parts (ID, CaseID), never stored beside them, so no reader splits an id
// to learn what ran (Ginkgo's SpecReport stores the parts of its full text
// and derives the text the same way).
type Case struct {
	Backend string
	Kind    string
	Spec    string
	Variant string // may hold dots: "add_u64_relaxed_sys.r0r1", "abort.after"
	Ranks   int    // world size; the id says it only when it is not 2
	// Pair is the ordered pair of ranks (row, column) a per-pair case
	// measures, nil for every other case. Its one spelling in a record is
	// the label pair=<src>-<dst> (PairLabel).
	Pair *[2]int
	// raw is an id read from a record that the parts cannot spell back
	// byte for byte (a hand-written file: "x", "a.b.c.v.r2"). It is kept
	// verbatim so that the record round-trips and Validate names it.
	raw      string
	verbatim bool
}

// DefaultRanks is the world size a case id leaves unsaid.
const DefaultRanks = 2

// CaseID is the id of a case: <backend>.<kind>.<spec>.<variant>, plus
// .r<N> when ranks ≠ 2 (docs/ARCHITECTURE.md, Contracts: case ids).
func CaseID(backend, kind, spec, variant string, ranks int) string {
	id := backend + "." + kind + "." + spec + "." + variant
	if ranks != DefaultRanks {
		id += ".r" + strconv.Itoa(ranks)
	}
	return id
}

// ID is the case's id, derived from its parts.
func (c Case) ID() string {
	if c.verbatim {
		return c.raw
	}
	return CaseID(c.Backend, c.Kind, c.Spec, c.Variant, c.Ranks)
}

// ParseCase is the one reader of a case id: a record (results.json, a
// baseline's fails.txt) holds only the id, and this recovers its parts.
// The first three dot-separated fields are backend, kind and spec; a last
// field r<N> (N ≠ 2, no leading zero) after the variant is the world size;
// the rest is the variant. An id the parts cannot spell back exactly is
// kept verbatim (Case.ID returns it unchanged). Pair is not in an id's
// grammar alone (pingpong_latency_local measures pair 0-0 without an
// r0r0 field): it comes from the labels (PairLabel), else from a last
// variant field r<s>r<d>, the suite's per-pair ids.
func ParseCase(id string, labels []string) Case {
	c := Case{Ranks: DefaultRanks, Pair: LabelPair(labels)}
	f := strings.SplitN(id, ".", 4)
	if len(f) == 4 {
		c.Backend, c.Kind, c.Spec, c.Variant = f[0], f[1], f[2], f[3]
		if i := strings.LastIndexByte(c.Variant, '.'); i > 0 {
			if n, ok := rankCount(c.Variant[i+1:]); ok {
				c.Variant, c.Ranks = c.Variant[:i], n
			}
		}
		if c.Pair == nil {
			c.Pair = variantPair(c.Variant)
		}
	}
	if c.ID() != id {
		c = Case{Ranks: DefaultRanks, Pair: c.Pair, raw: id, verbatim: true}
	}
	return c
}

// rankCount reads the r<N> field CaseID writes (N ≠ 2, canonical digits).
func rankCount(s string) (int, bool) {
	d, ok := strings.CutPrefix(s, "r")
	if !ok || d == "" || d[0] == '0' && d != "0" {
		return 0, false
	}
	n, err := strconv.Atoi(d)
	if err != nil || n == DefaultRanks || strconv.Itoa(n) != d {
		return 0, false
	}
	return n, true
}

// variantPair reads a variant's last field r<s>r<d>; nil without one.
func variantPair(v string) *[2]int {
	last := v[strings.LastIndexByte(v, '.')+1:]
	var s, d int
	if n, err := fmt.Sscanf(last, "r%dr%d", &s, &d); err != nil || n != 2 || fmt.Sprintf("r%dr%d", s, d) != last || s < 0 || d < 0 {
		return nil
	}
	return &[2]int{s, d}
}

// PairPrefix starts the label that names a per-pair case's ordered pair.
const PairPrefix = "pair="

// PairLabel is the label a per-pair case carries: pair=<src>-<dst>.
func PairLabel(src, dst int) string { return fmt.Sprintf("%s%d-%d", PairPrefix, src, dst) }

// LabelPair reads the pair=<src>-<dst> label (PairLabel), nil without one.
func LabelPair(labels []string) *[2]int {
	for _, l := range labels {
		v, ok := strings.CutPrefix(l, PairPrefix)
		if !ok {
			continue
		}
		a, b, ok := strings.Cut(v, "-")
		s, err1 := strconv.Atoi(a)
		d, err2 := strconv.Atoi(b)
		if ok && err1 == nil && err2 == nil && s >= 0 && d >= 0 {
			return &[2]int{s, d}
		}
	}
	return nil
}

// resultFields is Result without its methods, so that MarshalJSON and
// UnmarshalJSON can use encoding/json's field handling for the rest.
type resultFields Result

// resultJSON is a Result as results.json spells it: the derived id first,
// then every other field as tagged (the embedded Case is json:"-").
type resultJSON struct {
	ID string `json:"id"`
	*resultFields
}

// MarshalJSON writes the id derived from the case's parts; the parts
// themselves are not in the schema (the id says them).
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{ID: r.ID(), resultFields: (*resultFields)(&r)})
}

// UnmarshalJSON reads a result and recovers its parts from the id and the
// labels (ParseCase), so a results.json of any age reads as typed.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	j.resultFields = (*resultFields)(r)
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	r.Case = ParseCase(j.ID, r.Labels)
	return nil
}
