package suite

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// Issue 49 U28: --alloc= (empty) was taken as every kind and ran the suite
// into out/; every other bad input tried was one line, exit 2.
func TestEmptyAllocIsRefused(t *testing.T) {
	for _, args := range [][]string{{"--alloc="}, {"--alloc", ""}, {"-alloc="}} {
		o := &Options{}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.Register(fs)
		err := Parse(fs, args)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--alloc= is empty") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line refusing the empty kind", args, err)
		}
	}
	o := &Options{}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Register(fs)
	if err := Parse(fs, []string{"--alloc=memfd"}); err != nil {
		t.Errorf("--alloc=memfd: %v", err)
	}
}
