package kernels

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// The code objects built from kernels/src by scripts/build-kernels.sh with the
// pinned clang-19 (see docs/KERNELS.md): kernels.sm_NN.ptx (PTX text, no
// trailing NUL) and kernels.<gfx>.hsaco (plain AMDGPU ELF, code object v5,
// xnack and sramecc "any" where the target has them).
//
//go:embed obj
var objFS embed.FS

// ErrNoObject is returned (wrapped, with the target and the targets shipped)
// when no embedded code object can run on a device.
var ErrNoObject = errors.New("no code object for target")

// Object is one embedded code object.
type Object struct {
	Target string // "sm_70", "sm_90", "gfx942", ...
	Format string // "ptx" or "elf"
	// Data is the file's bytes. PTX is text without the trailing NUL that
	// cuModuleLoadData needs: the CUDA backend appends it.
	Data []byte
}

const (
	FormatPTX = "ptx"
	FormatELF = "elf"
)

// needsNewerLLVM lists targets clang-19 cannot build, with the reason.
var needsNewerLLVM = map[string]string{
	"gfx950": "needs LLVM >= 20 (objects are built with clang-19)",
}

type shipped struct {
	target, format, file string
	sm                   int // PTX only
}

func list() []shipped {
	ents, err := fs.ReadDir(objFS, "obj")
	if err != nil {
		return nil
	}
	var out []shipped
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "kernels.") {
			continue
		}
		switch {
		case strings.HasSuffix(n, ".ptx"):
			t := strings.TrimSuffix(strings.TrimPrefix(n, "kernels."), ".ptx")
			sm, err := strconv.Atoi(strings.TrimPrefix(t, "sm_"))
			if err != nil || !strings.HasPrefix(t, "sm_") {
				continue
			}
			out = append(out, shipped{t, FormatPTX, "obj/" + n, sm})
		case strings.HasSuffix(n, ".hsaco"):
			t := strings.TrimSuffix(strings.TrimPrefix(n, "kernels."), ".hsaco")
			out = append(out, shipped{t, FormatELF, "obj/" + n, 0})
		}
	}
	return out
}

// Shipped lists the targets with an embedded object, PTX first, sorted.
func Shipped() []string {
	var ptx, gfx []string
	for _, s := range list() {
		if s.format == FormatPTX {
			ptx = append(ptx, s.target)
		} else {
			gfx = append(gfx, s.target)
		}
	}
	sort.Slice(ptx, func(i, j int) bool { return smNum(ptx[i]) < smNum(ptx[j]) })
	sort.Strings(gfx)
	return append(ptx, gfx...)
}

func smNum(t string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(t, "sm_"))
	return n
}

// ForArch returns the code object for a device architecture:
//   - NVIDIA "sm_90", "sm_80", "sm_90a", "90" (compute capability digits):
//     the PTX with the highest target not above the device (the driver JITs
//     it forward), so sm_80 gets sm_70 PTX and sm_100 gets sm_90 PTX;
//   - AMD "gfx942", "gfx942:sramecc+:xnack-", "amdgcn-amd-amdhsa--gfx90a:xnack+"
//     (HSA ISA name or HIP gcnArchName): that processor's ELF. The shipped ELFs
//     leave xnack and sramecc unspecified ("any"), so every feature mode matches.
//
// Anything else wraps ErrNoObject with the target and the targets shipped.
func ForArch(arch string) (Object, error) {
	a := strings.TrimSpace(strings.ToLower(arch))
	if i := strings.LastIndex(a, "--"); i >= 0 { // amdgcn-amd-amdhsa--gfx942:...
		a = a[i+2:]
	}
	if strings.HasPrefix(a, "gfx") {
		proc := a
		if i := strings.IndexByte(proc, ':'); i >= 0 {
			proc = proc[:i]
		}
		for _, s := range list() {
			if s.format == FormatELF && s.target == proc {
				return load(s)
			}
		}
		if why, ok := needsNewerLLVM[proc]; ok {
			return Object{}, fmt.Errorf("%w %q: not shipped: %s; shipped: %s", ErrNoObject, arch, why, strings.Join(Shipped(), ", "))
		}
		return Object{}, noObject(arch)
	}
	digits := strings.TrimPrefix(a, "sm_")
	digits = strings.TrimRight(digits, "abf") // sm_90a, sm_100f: same family PTX
	sm, err := strconv.Atoi(digits)
	if err != nil || sm <= 0 {
		return Object{}, noObject(arch)
	}
	best := shipped{sm: -1}
	for _, s := range list() {
		if s.format == FormatPTX && s.sm <= sm && s.sm > best.sm {
			best = s
		}
	}
	if best.sm < 0 {
		return Object{}, noObject(arch)
	}
	return load(best)
}

func noObject(arch string) error {
	return fmt.Errorf("%w %q; shipped: %s", ErrNoObject, arch, strings.Join(Shipped(), ", "))
}

func load(s shipped) (Object, error) {
	b, err := objFS.ReadFile(s.file)
	if err != nil {
		return Object{}, fmt.Errorf("kernels: reading embedded %s: %w", s.file, err)
	}
	return Object{Target: s.target, Format: s.format, Data: b}, nil
}

// Usable reports whether a device of architecture arch can run the
// kernels: nil when ForArch finds an object for it, else ForArch's error
// (wrapping ErrNoObject, naming the targets shipped). Placement asks it of
// every visible device (device.Place), the parent and the rank alike.
func Usable(arch string) error {
	_, err := ForArch(arch)
	return err
}
