package suite

import (
	"flag"
	"strings"
)

// refuseEmpty refuses a flag given with an empty value where empty means
// nothing the user could have meant: --alloc= ran every kind into out/,
// while the other bad inputs were one line, exit 2 (issue 49 U28). An
// unset flag (no --alloc at all) is every kind, as documented.
func refuseEmpty(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil && f.Name == "alloc" && f.Value.String() == "" {
			err = usagef("--alloc= is empty: name an allocation kind (known: %s), or leave the flag out for every kind", strings.Join(allKinds(), ", "))
		}
	})
	return err
}
