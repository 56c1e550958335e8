package kernels

import "testing"

// Every strong litmus environment names the outcomes its histogram must
// show (two, neither the weak one), and LitmusLacking finds exactly the
// ones a histogram lacks: a degenerate histogram is never taken as full.
func TestLitmusNeeds(t *testing.T) {
	for op, weak := range LitmusWeak {
		needs := LitmusNeeds[op]
		if len(needs) != 2 {
			t.Errorf("%s: %d needed outcomes, want the two orders of its roles", op, len(needs))
			continue
		}
		var full [TallyBins]uint64
		for _, o := range needs {
			if o == weak {
				t.Errorf("%s: the weak outcome %v is listed as needed", op, o)
			}
			full[TallyBin(o[0], o[1])] = 5
		}
		if l := LitmusLacking(op, &full); len(l) != 0 {
			t.Errorf("%s: a histogram with every needed outcome lacks %v", op, l)
		}
		for _, o := range needs {
			h := full
			h[TallyBin(o[0], o[1])] = 0
			if l := LitmusLacking(op, &h); len(l) != 1 || l[0] != o {
				t.Errorf("%s without %v: lacking %v", op, o, l)
			}
		}
		var empty [TallyBins]uint64
		if l := LitmusLacking(op, &empty); len(l) != 2 {
			t.Errorf("%s: an empty histogram lacks %v", op, l)
		}
	}
}

// Witnessed kernels end their arguments with WitnessArgs, and every check
// kernel the parent trusts (sum, tally, fill, the MP counts) is witnessed.
func TestWitnessArgs(t *testing.T) {
	must := map[Op]bool{OpSum: true, OpTally: true, OpFill: true, OpMP: true}
	for _, k := range All() {
		if must[k.Op] && !k.Witness {
			t.Errorf("%s: a check kernel without a witness", k.Name)
		}
		if !k.Witness {
			if k.ArgIndex("wit") >= 0 || k.ArgIndex("nonce") >= 0 {
				t.Errorf("%s: witness arguments on a kernel not marked Witness", k.Name)
			}
			continue
		}
		n := len(k.Args)
		if n < 2 || k.Args[n-2] != WitnessArgs[0] || k.Args[n-1] != WitnessArgs[1] {
			t.Errorf("%s: arguments %v do not end with %v", k.Name, k.Args, WitnessArgs)
		}
	}
}

// TallyBin is a bijection of the six classes of each slot onto the bins.
func TestTallyBin(t *testing.T) {
	seen := map[uint64]bool{}
	for a := uint64(0); a < 6; a++ {
		for b := uint64(0); b < 6; b++ {
			bin := TallyBin(a, b)
			if bin >= TallyBins || seen[bin] {
				t.Fatalf("TallyBin(%d,%d) = %d: out of range or taken", a, b, bin)
			}
			seen[bin] = true
		}
	}
	if TallyBin(9, 1<<40) != TallyBin(5, 5) {
		t.Fatal("values above 4 are not classed together")
	}
}
