// Package amdabi compares the Go mirrors of ROCm structs, enums and symbol
// lists (rank/hsa, rank/hip) with what the real ROCm headers and libraries
// say. scripts/amd-headers.sh compiles scripts/amdabi/*.c with gcc against
// Debian's libhsa-runtime-dev / libamdhip64-dev (sid 6.4, experimental 7.2)
// and writes, per ROCm version V, into one directory (env P2PAT_AMD_ABI):
//
//	hsa-V.txt, hip-V.txt         "name value" lines (decimal) or "name absent"
//	syms-hsa-V.txt, syms-hip-V.txt  defined dynamic symbols, one a line
//
// The comparison is pure Go and needs no GPU and no ROCm at run time.
package amdabi

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Item is one mirrored fact: a size, an offset or a constant.
type Item struct {
	Name  string // as the C program prints it: sizeof.T, offsetof.T.f, or the C identifier
	Value uint64
	// Since is the first ROCm version whose headers declare Name; "" means
	// every supported header set must have it. A header set older than Since
	// may print "Name absent"; a newer one that lacks it is a mismatch.
	Since string
}

// Table is a package's list of mirrored facts.
type Table []Item

// EnvDir is the environment variable naming the output directory of
// scripts/amd-headers.sh.
const EnvDir = "P2PAT_AMD_ABI"

// Dir returns the ABI directory or skips the test (fails it under CI=true:
// CI must prove the ABI, not skip it).
func Dir(t testing.TB) string {
	t.Helper()
	d := os.Getenv(EnvDir)
	if d == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set under CI=true; run scripts/amd-headers.sh and export the line it prints", EnvDir)
		}
		t.Skip("set P2PAT_AMD_ABI; run scripts/amd-headers.sh")
	}
	return d
}

// Versions lists the ROCm versions for which dir holds "<prefix>-V.txt".
func Versions(dir, prefix string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(dir, prefix+"-*.txt"))
	if err != nil {
		return nil, err
	}
	var vs []string
	for _, p := range m {
		b := filepath.Base(p)
		vs = append(vs, strings.TrimSuffix(strings.TrimPrefix(b, prefix+"-"), ".txt"))
	}
	sort.Slice(vs, func(i, j int) bool { return Less(vs[i], vs[j]) })
	if len(vs) == 0 {
		return nil, fmt.Errorf("no %s-*.txt in %s: run scripts/amd-headers.sh", prefix, dir)
	}
	return vs, nil
}

// Load reads one "name value" file into name -> value text.
func Load(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want \"name value\", got %q", path, n, line)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s printed twice", path, n, name)
		}
		out[name] = strings.TrimSpace(val)
	}
	return out, sc.Err()
}

// Compare returns one line per difference between the Go table and the
// header output of ROCm version ver: a value that differs, a name the
// headers lack (unless ver is older than the item's Since), and a name the C
// program prints that the Go table does not mirror (every checked fact must
// have a Go counterpart, or the check proves nothing).
func Compare(want Table, got map[string]string, ver string) []string {
	var diffs []string
	seen := map[string]bool{}
	for _, it := range want {
		if seen[it.Name] {
			diffs = append(diffs, fmt.Sprintf("%s: listed twice in the Go table", it.Name))
			continue
		}
		seen[it.Name] = true
		v, ok := got[it.Name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: Go mirrors it but the %s check program does not print it", it.Name, ver))
		case v == "absent":
			if it.Since == "" || !Less(ver, it.Since) {
				diffs = append(diffs, fmt.Sprintf("%s: absent from the ROCm %s headers (Go says since %q)", it.Name, ver, it.Since))
			}
		default:
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("%s: unparsable header value %q", it.Name, v))
			} else if n != it.Value {
				diffs = append(diffs, fmt.Sprintf("%s: Go %d (0x%x), ROCm %s headers %d (0x%x)", it.Name, it.Value, it.Value, ver, n, n))
			}
		}
	}
	for name := range got {
		if !seen[name] && !strings.HasPrefix(name, "HIP_VERSION_") {
			diffs = append(diffs, fmt.Sprintf("%s: printed by the %s check program but not mirrored in Go", name, ver))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// Symbols reads a syms-*.txt file.
func Symbols(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out[l] = true
		}
	}
	return out, nil
}

// Less compares dotted numeric versions ("6.4.3" < "7.2.4" < "7.10").
func Less(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// CheckAll compares want with every header set's output for prefix (hsa or
// hip) in the P2PAT_AMD_ABI folder and reports each difference.
func CheckAll(t testing.TB, prefix string, want Table) {
	t.Helper()
	dir := Dir(t)
	vs, err := Versions(dir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		got, err := Load(filepath.Join(dir, prefix+"-"+v+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range Compare(want, got, v) {
			t.Errorf("ROCm %s: %s", v, d)
		}
		t.Logf("ROCm %s: %d %s facts compared", v, len(want), prefix)
	}
}
