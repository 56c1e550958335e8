package inject

import (
	"fmt"
	"strconv"
)

// CorruptRead is the read-corruption rule kind:
//
//	corrupt-read:<bit>   every device-to-host read the rank makes has bit
//	                     <bit> (0-63) of its reply's first 8 bytes flipped
//	                     (byte bit/8, bit bit%8), after the backend's Read
//	                     returned and before the bytes leave the rank
//
// It stands in for a driver whose device-to-host copy returns wrong bytes
// and says success: the seam is the rank's one read path (rank/readseam.go),
// below every check the harness makes, so the suite can only notice it by
// verifying what it read (harness/readcheck.go, docs/SYNC.md). Every read is
// hit, whatever its length; a read shorter than byte bit/8 + 1 is left as
// it is (it has no such byte), which a rule of bit 0-7 never meets.
const CorruptRead = "corrupt-read"

// MaxReadBit is the highest bit corrupt-read takes: the reply's first word.
const MaxReadBit = 63

// parseRead reads corrupt-read:<bit>; ok is false for any other kind (the
// caller goes on with its own kinds). Kept out of parseOne's switch so the
// rule's code stays in this file.
func parseRead(kind, arg string) (r Rule, ok bool, err error) {
	if kind != CorruptRead {
		return Rule{}, false, nil
	}
	b, perr := strconv.ParseUint(arg, 10, 8)
	if perr != nil || b > MaxReadBit {
		return Rule{}, true, fmt.Errorf("bit %q: want corrupt-read:<bit>, a bit of the reply's first word, 0 to %d", arg, MaxReadBit)
	}
	return Rule{Kind: CorruptRead, Bit: uint8(b)}, true, nil
}

// readString is a corrupt-read rule as Parse reads it back.
func readString(r Rule) string { return CorruptRead + ":" + strconv.Itoa(int(r.Bit)) }

// CorruptReadIn is the read seam: it flips, in p (the bytes a read brought
// back), the bit of every corrupt-read rule installed, and reports the
// last rule that changed p. p is changed in place; ok is false (p as read)
// without such a rule.
func CorruptReadIn(p []byte) (rule Rule, ok bool) {
	in := active.Load()
	if in == nil {
		return Rule{}, false
	}
	for i, r := range in.rules {
		if r.Kind != CorruptRead || len(p) <= int(r.Bit/8) {
			continue
		}
		in.counts[i].Add(1)
		in.fired(i)
		p[r.Bit/8] ^= 1 << (r.Bit % 8)
		rule, ok = r, true
	}
	return rule, ok
}
