// Package ab is the A/B run (--ab=SPEC): what stack B is (Spec: a driver
// library, the same stack, or the same stack under the driver-fault
// injector's rules), the checks that refuse a B that cannot be judged
// before the run starts, the order of each block (BFirst), and the
// judgement of B against A (Judge: outcome changes, and paired metrics
// under a paired test against a minimum effect, Paired and Decide).
// docs/GATING.md ("A/B: the upgrade side by side") is its user's view.
package ab

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"p2patomics/harness/backends"
	"p2patomics/internal/inject"
)

// Spec kinds.
const (
	Same    = "same"    // B is A: the A/A control
	Inject  = "inject"  // B is A under the injector's rules
	Library = "library" // B loads the named driver library
)

// ErrBadSpec is every refusal of a SPEC: the suite turns it into one
// line and exit 2, before --out is touched.
var ErrBadSpec = errors.New("bad --ab")

// Spec is stack B as --ab named it.
type Spec struct {
	Raw  string
	Kind string
	// Rules are the injector's rules of an inject: SPEC.
	Rules []inject.Rule
	// Path is a library SPEC as given (a file or a folder).
	Path string
}

// Parse reads SPEC's form: same, inject:RULES (internal/inject's rule
// syntax), or a path that exists. Whether a library fits the backend is
// Resolve's.
func Parse(s string) (Spec, error) {
	sp := Spec{Raw: s}
	switch {
	case s == "":
		return sp, fmt.Errorf("%w: empty SPEC (want a driver library file or folder, same, or inject:RULES)", ErrBadSpec)
	case s == Same:
		sp.Kind = Same
	case strings.HasPrefix(s, "inject:"):
		rules, err := inject.Parse(strings.TrimPrefix(s, "inject:"))
		if err != nil {
			return sp, fmt.Errorf("%w: %v", ErrBadSpec, err)
		}
		if len(rules) == 0 {
			return sp, fmt.Errorf("%w: inject: names no rule", ErrBadSpec)
		}
		sp.Kind, sp.Rules = Inject, rules
	default:
		if _, err := os.Stat(s); err != nil {
			return sp, fmt.Errorf("%w: %s is neither same, inject:RULES nor a library file or folder: %v", ErrBadSpec, s, errors.Unwrap(err))
		}
		sp.Kind, sp.Path = Library, s
	}
	return sp, nil
}

// RuleStrings is the inject: SPEC's rules as wire.Settings carries them.
func (s Spec) RuleStrings() []string {
	if len(s.Rules) == 0 {
		return nil
	}
	return inject.Strings(s.Rules)
}

// Backends lists the backends a library SPEC can name: those whose row
// names a driver library (harness/backends), in the rows' order.
func Backends() []string {
	var names []string
	for _, b := range backends.All {
		if b.Library != nil {
			names = append(names, b.Name)
		}
	}
	return names
}

// Resolve is the library file stack B loads on backend: the file named,
// or the backend's library in the folder named (directly, or in its lib/:
// a ROCm root). It refuses a file that is not a shared object for this
// machine, one that is not the backend's driver library (its soname, the
// symbol every one exports), and a CUDA user-mode driver whose version the
// kernel module cannot run (CheckCUDAVersion).
func (s Spec) Resolve(backend string) (string, error) {
	b := backends.Lookup(backend)
	if b == nil || b.Library == nil {
		return "", fmt.Errorf("%w: --ab=%s names a driver library, but backend %s loads none (use same or inject:RULES)", ErrBadSpec, s.Raw, backend)
	}
	k := b.Library
	file := s.Path
	if fi, err := os.Stat(file); err == nil && fi.IsDir() {
		file = ""
		for _, rel := range k.InRoot {
			if fi, err := os.Stat(filepath.Join(s.Path, rel)); err == nil && !fi.IsDir() {
				file = filepath.Join(s.Path, rel)
				break
			}
		}
		if file == "" {
			return "", fmt.Errorf("%w: %s holds no %s driver library (looked for %s)", ErrBadSpec, s.Path, backend, strings.Join(k.InRoot, ", "))
		}
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBadSpec, file, err)
	}
	if err := checkLibrary(abs, backend, k); err != nil {
		return "", err
	}
	if k.ModuleVersionFile != "" {
		if err := CheckCUDAVersion(abs, k.ModuleVersionFile); err != nil {
			return "", err
		}
	}
	return abs, nil
}

var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// checkLibrary refuses what the rank's dlopen would refuse or load as
// something else: not ELF, not a 64-bit shared object for this machine,
// not the backend's soname, without the backend's entry point. A stand-in
// built without a soname (a test's pass-through) is taken by its file
// name.
func checkLibrary(path, backend string, k *backends.DriverLibrary) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %s is not a loadable library: %v", ErrBadSpec, path, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Type != elf.ET_DYN {
		return fmt.Errorf("%w: %s is not a 64-bit shared object (%s, %s)", ErrBadSpec, path, f.Class, f.Type)
	}
	if m, ok := machines[runtime.GOARCH]; ok && f.Machine != m {
		return fmt.Errorf("%w: %s is built for %s, this machine is %s", ErrBadSpec, path, f.Machine, m)
	}
	name := filepath.Base(path)
	if sonames, err := f.DynString(elf.DT_SONAME); err == nil && len(sonames) > 0 {
		name = sonames[0]
	} else if real, err := filepath.EvalSymlinks(path); err == nil && !k.Soname.MatchString(name) {
		name = filepath.Base(real)
	}
	if !k.Soname.MatchString(name) {
		return fmt.Errorf("%w: %s is %s, not the %s driver library (%s)", ErrBadSpec, path, name, backend, k.Soname)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return fmt.Errorf("%w: %s: no dynamic symbols: %v", ErrBadSpec, path, err)
	}
	for _, s := range syms {
		if s.Name == k.InitSymbol && s.Section != elf.SHN_UNDEF {
			return nil
		}
	}
	return fmt.Errorf("%w: %s exports no %s: not a %s driver library", ErrBadSpec, path, k.InitSymbol, backend)
}

// versionRe finds a driver version (550.54.15, 570.86.10, 535.104.05).
var versionRe = regexp.MustCompile(`(\d{3})\.(\d{2,3})(?:\.(\d{2,3}))?`)

// forwardFloor is, per CUDA user-mode driver branch, the oldest kernel
// module branch CUDA's forward compatibility (the cuda-compat package)
// runs it on: NVIDIA's compatibility table, by its branches' first
// number. A user-mode driver newer than its kernel module outside this
// range does not initialise (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE or
// a version mismatch), so the run would judge an error, not a stack.
var forwardFloor = []struct{ umdFrom, kmdFloor int }{
	{580, 535}, // CUDA 13.x
	{525, 470}, // CUDA 12.x
	{450, 418}, // CUDA 11.x
}

// CheckCUDAVersion refuses a libcuda whose version (read from its real
// file name, libcuda.so.550.54.15) the kernel module (versionFile,
// /proc/driver/nvidia/version) cannot run: older than the module, newer
// within the module's own branch, or newer than forward compatibility
// allows. A version it cannot read on either
// side (a stand-in library, a machine without the module) is not refused
// here: the rank's load then says what happened.
func CheckCUDAVersion(lib, versionFile string) error {
	real, err := filepath.EvalSymlinks(lib)
	if err != nil {
		real = lib
	}
	umd := versionRe.FindStringSubmatch(filepath.Base(real))
	b, err := os.ReadFile(versionFile)
	if umd == nil || err != nil {
		return nil
	}
	kmd := versionRe.FindStringSubmatch(string(b))
	if kmd == nil {
		return nil
	}
	u, k := num(umd), num(kmd)
	switch {
	case less(u, k):
		return fmt.Errorf("%w: %s is CUDA user-mode driver %s, older than the kernel module %s: it cannot run on it", ErrBadSpec, lib, umd[0], kmd[0])
	case less(k, u) && u[0] == k[0]:
		// Within one branch the user-mode driver and the kernel module
		// must be the same build (the module refuses another: "NVRM: API
		// mismatch"); forward compatibility is across branches only.
		return fmt.Errorf("%w: %s is CUDA user-mode driver %s, newer than the kernel module %s of its own branch: within a branch they must match exactly (NVRM: API mismatch)", ErrBadSpec, lib, umd[0], kmd[0])
	case less(k, u):
		for _, f := range forwardFloor {
			if u[0] >= f.umdFrom {
				if k[0] < f.kmdFloor {
					return fmt.Errorf("%w: %s is CUDA user-mode driver %s: forward compatibility runs it on kernel modules from branch %d, this one is %s", ErrBadSpec, lib, umd[0], f.kmdFloor, kmd[0])
				}
				return nil
			}
		}
	}
	return nil
}

func num(m []string) [3]int {
	var v [3]int
	for i := 0; i < 3; i++ {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
