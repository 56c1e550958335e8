package suite

import (
	"flag"
	"strings"
)

// emptyFlag is the refusal of a flag given with an empty value where empty
// means nothing the user could have meant, "" when there is none:
// --alloc= ran every kind into out/, while the other bad inputs were one
// line, exit 2 (issue 49 U28). An unset flag (no --alloc at all) is every
// kind, as documented. kinds are the known allocation kinds; Parse makes
// the message a usage error (this file sits below options.go).
func emptyFlag(fs *flag.FlagSet, kinds []string) string {
	msg := ""
	fs.Visit(func(f *flag.Flag) {
		if msg == "" && f.Name == "alloc" && f.Value.String() == "" {
			msg = "--alloc= is empty: name an allocation kind (known: " + strings.Join(kinds, ", ") + "), or leave the flag out for every kind"
		}
	})
	return msg
}
