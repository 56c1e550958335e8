package binding

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"p2patomics/internal/inject"
)

// InjectedNames are the names of table's entries a call of which asks the
// injector first (Symbol.Injected): what inject.Symbols must list for the
// backend whose table it is.
func InjectedNames(table []Symbol) []string {
	var out []string
	for _, s := range table {
		if s.Injected {
			out = append(out, s.Names...)
		}
	}
	return out
}

// proofCode is the status ProveInjected's rules return: not 0 (success)
// and in range of every vendor's enum type.
const proofCode = 0x7b

// ProveInjected shows that every wrapped entry of table goes through the
// injector: it binds the table to stand-ins that record being called
// (BindFuncs), then, for each entry in turn, installs fail:<name>=0x7b and
// calls the entry's Fn with zero arguments; the call must return 0x7b
// without reaching the stand-in. A Manual entry is skipped (its backend's
// own test covers its wrapper). It leaves no rules installed. It is for
// the backends' tests: their tables are built by their own code, so only
// they can hand them here.
func ProveInjected(table []Symbol) error {
	var reached []string
	if err := BindFuncs(table, nil, func(n string) { reached = append(reached, n) }); err != nil {
		return err
	}
	defer inject.Set(nil)
	var errs []error
	for _, s := range table {
		if !s.Injected || s.Bind == nil {
			continue
		}
		rules, err := inject.Parse(fmt.Sprintf("fail:%s=%d", s.Name(), proofCode))
		if err != nil {
			return err
		}
		inject.Set(rules)
		reached = reached[:0]
		code, err := callZero(s.Fn)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", s.Name(), err))
		case slices.Contains(reached, s.Name()):
			errs = append(errs, fmt.Errorf("%s: under fail:%s the call was made (%v)", s.Name(), s.Name(), reached))
		case code != proofCode:
			errs = append(errs, fmt.Errorf("%s: under fail:%s=%d the call returned %d", s.Name(), s.Name(), proofCode, code))
		}
		if f := inject.Fired(); len(f) != 1 || f[0] != 1 {
			errs = append(errs, fmt.Errorf("%s: the rule counts %v fires, want one", s.Name(), f))
		}
	}
	return errors.Join(errs...)
}

// callZero calls *fn (a func returning a Status) with zero arguments and
// returns its Code.
func callZero(fn any) (int64, error) {
	f := reflect.ValueOf(fn).Elem()
	t := f.Type()
	args := make([]reflect.Value, t.NumIn())
	for i := range args {
		args[i] = reflect.Zero(t.In(i))
	}
	out := f.Call(args)
	if len(out) != 1 || out[0].Kind() != reflect.Struct {
		return 0, fmt.Errorf("returns %v, not a Status", t)
	}
	c := out[0].FieldByName("Code")
	switch {
	case c.CanInt():
		return c.Int(), nil
	case c.CanUint():
		return int64(c.Uint()), nil
	}
	return 0, fmt.Errorf("returns %v, not a Status", t)
}
