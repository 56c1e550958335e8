package device

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCapsNamedCoversEveryCap: every yes/no field of Caps is answered by
// Named under its results.json name, so a needs= label can name any of
// them; a name Caps has no field for is not ok.
func TestCapsNamedCoversEveryCap(t *testing.T) {
	ct := reflect.TypeFor[Caps]()
	var want []string
	for i := range ct.NumField() {
		f := ct.Field(i)
		if f.Type != reflect.TypeFor[Cap]() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		want = append(want, name)
		var c Caps
		marked := Yes("marked %s", name)
		reflect.ValueOf(&c).Elem().Field(i).Set(reflect.ValueOf(marked))
		got, ok := c.Named(name)
		if !ok || got != marked {
			t.Errorf("Named(%q) = %+v, %v; want the %s field", name, got, ok, f.Name)
		}
	}
	slices.Sort(want)
	if got := CapNames(); !slices.Equal(got, want) {
		t.Errorf("CapNames() = %v, Caps' fields %v", got, want)
	}
	if _, ok := (Caps{}).Named("host_native_atomic_supported"); ok {
		t.Error("a vendor attribute name is not a capability")
	}
}

// TestCapKnown: Yes and No are answers, the zero Cap is none.
func TestCapKnown(t *testing.T) {
	if (Cap{}).Known() || !Yes("y").Known() || !No("n").Known() {
		t.Error("Known: zero is unanswered, Yes and No are answers")
	}
}

// TestUnreadCapsAndCeilingsLeaveNoTrace: a backend that answers no MPS
// question and reads no ceiling (host, AMD) writes the JSON it wrote
// before those fields existed, so a host results.json keeps its shape.
func TestUnreadCapsAndCeilingsLeaveNoTrace(t *testing.T) {
	b, err := json.Marshal(Info{Name: "cpu", Caps: Caps{HostAtomics: Yes("cpu")}})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "mps") || strings.Contains(s, "ceilings") {
		t.Errorf("unanswered fields are in the JSON: %s", s)
	}
	b, _ = json.Marshal(Info{Caps: Caps{MPS: No("off")}, Ceilings: Ceilings{PCIe: Bandwidth{63, "gen 5 x16"}}})
	var back Info
	if err := json.Unmarshal(b, &back); err != nil || back.Caps.MPS != No("off") || back.Ceilings.PCIe.GBps != 63 || back.Ceilings.HBM != (Bandwidth{}) {
		t.Errorf("round trip %s: %+v %v", b, back, err)
	}
}

// attrRead is a parent reading a raw vendor attribute: Info.Attrs, the
// Ctx helper that wrapped it, or the attrs of a results.json's GPU entry.
var attrRead = regexp.MustCompile(`\.Attrs\[|\.Attr\(|\["attrs"\]`)

// TestParentDecidesNothingOnAttrs: the parent's packages (harness/...,
// specs, cmd) never read Attrs: what they decide on is in Caps and
// Ceilings, answered once by the rank that knows its vendor. Attrs stay in
// results.json for the reader. Tests included: a test that reads an
// attribute is a parent deciding on one.
func TestParentDecidesNothingOnAttrs(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	for _, dir := range []string{"harness", "specs", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			n++
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				if attrRead.MatchString(line) {
					t.Errorf("%s:%d reads a raw attribute (answer it in device.Caps or device.Ceilings): %s", p, i+1, strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 50 {
		t.Fatalf("walked %d Go files under harness, specs and cmd: not the repository", n)
	}
}
