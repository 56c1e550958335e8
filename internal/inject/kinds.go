package inject

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ruleKind is one injector rule kind, declared once: its name, the syntax
// Parse takes (docs/FAULTS.md and the package doc list it), its parser and
// its text, and its seam, the function of this package that acts on it.
// Parse, Rule.String and the list of kinds read the rows (cilium/ebpf's
// elf_sections.go rows, read by one loop; issue 51). A new rule is one row
// here and the code at its seam: TestEveryRuleKindFiresAtItsSeam installs
// an example of every row and fails until the row's seam acts on it.
type ruleKind struct {
	name   string
	syntax string
	seam   string // DropLaunch, Call, Wedge, CopyPlan, StretchOf or CorruptReadIn
	parse  func(kind, arg string) (Rule, error)
	format func(Rule) string
}

var ruleKinds = []ruleKind{
	{Drop, "drop:<kernel>", "DropLaunch", parseDrop, func(r Rule) string { return Drop + ":" + r.Target }},
	{DropEvery, "drop-every:<N>", "DropLaunch", parseDropEvery, func(r Rule) string { return fmt.Sprintf("%s:%d", DropEvery, r.Every) }},
	{Fail, "fail:<symbol>=<code>", "Call", parseFail, func(r Rule) string { return fmt.Sprintf("%s:%s=%d", Fail, r.Target, r.Code) }},
	{Noop, "noop:<symbol>", "Call", parseNoop, func(r Rule) string { return Noop + ":" + r.Target }},
	{FailEvery, "fail-every:<symbol>=<code>/<N>", "Call", parseFail,
		func(r Rule) string { return fmt.Sprintf("%s:%s=%d/%d", FailEvery, r.Target, r.Code, r.Every) }},
	{CopyTimes, "copy-times:<F>", "CopyPlan", parseCopyTimes, func(r Rule) string { return CopyTimes + ":" + factorText(r.Factor) }},
	{Stretch, "stretch:<kernel>=<F>", "StretchOf", parseStretch,
		func(r Rule) string { return Stretch + ":" + r.Target + "=" + factorText(r.Factor) }},
	{Hang, "hang:<symbol>", "Wedge", hangRule, hangString},
	{HangAt, "hang-at:<symbol>=<N>", "Wedge", hangRule, hangString},
	{CorruptRead, "corrupt-read:<bit>", "CorruptReadIn", readRule, readString},
}

// kindOf is the row of the kind named k.
func kindOf(k string) (ruleKind, bool) {
	for _, rk := range ruleKinds {
		if rk.name == k {
			return rk, true
		}
	}
	return ruleKind{}, false
}

// kindNames lists the kinds, in the rows' order (Parse's errors).
func kindNames() string {
	names := make([]string, len(ruleKinds))
	for i, rk := range ruleKinds {
		names[i] = rk.name
	}
	return strings.Join(names, ", ")
}

func parseDrop(_, arg string) (Rule, error) {
	if !name(arg) {
		return Rule{}, errors.New("want drop:<kernel>, the kernel's manifest name")
	}
	return Rule{Kind: Drop, Target: arg}, nil
}

func parseDropEvery(_, arg string) (Rule, error) {
	n, err := every(arg)
	if err != nil {
		return Rule{}, err
	}
	return Rule{Kind: DropEvery, Every: n}, nil
}

func parseNoop(_, arg string) (Rule, error) {
	if !name(arg) {
		return Rule{}, errors.New("want noop:<symbol>")
	}
	return Rule{Kind: Noop, Target: arg}, nil
}

// parseFail reads fail:<symbol>=<code> and fail-every:<symbol>=<code>/<N>.
func parseFail(kind, arg string) (Rule, error) {
	sym, rest, ok := strings.Cut(arg, "=")
	if !ok || !name(sym) {
		if kind == Fail {
			return Rule{}, errors.New("want fail:<symbol>=<code>")
		}
		return Rule{}, errors.New("want fail-every:<symbol>=<code>/<N>")
	}
	r := Rule{Kind: kind, Target: sym}
	codeText := rest
	if kind == FailEvery {
		var nText string
		if codeText, nText, ok = strings.Cut(rest, "/"); !ok {
			return Rule{}, errors.New("want fail-every:<symbol>=<code>/<N>")
		}
		n, err := every(nText)
		if err != nil {
			return Rule{}, err
		}
		r.Every = n
	}
	c, err := strconv.ParseInt(codeText, 0, 64)
	if err != nil || c == 0 || c < -1<<31 || c > 1<<32-1 {
		return Rule{}, fmt.Errorf("code %q: want a non-zero status that fits 32 bits (0 is success in every vendor's enum: use noop)", codeText)
	}
	r.Code = c
	return r, nil
}

func parseCopyTimes(_, arg string) (Rule, error) {
	f, err := factor(arg)
	if err != nil {
		return Rule{}, fmt.Errorf("want copy-times:<F>: %w", err)
	}
	return Rule{Kind: CopyTimes, Factor: f}, nil
}

func parseStretch(_, arg string) (Rule, error) {
	k, fText, ok := strings.Cut(arg, "=")
	if !ok || !name(k) {
		return Rule{}, errors.New("want stretch:<kernel>=<F>, the kernel's manifest name")
	}
	f, err := factor(fText)
	if err != nil {
		return Rule{}, fmt.Errorf("want stretch:<kernel>=<F>: %w", err)
	}
	return Rule{Kind: Stretch, Target: k, Factor: f}, nil
}

// hangRule and readRule are the hang and read files' own parsers as rows'.
func hangRule(kind, arg string) (Rule, error) {
	r, _, err := parseHang(kind, arg)
	return r, err
}

func readRule(kind, arg string) (Rule, error) {
	r, _, err := parseRead(kind, arg)
	return r, err
}
