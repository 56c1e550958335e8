package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"
)

// abiProbe has cuIpcOpenMemHandle_v2's C signature. It records what the
// callee really received, so the word-by-word Go declaration is checked
// against gcc's SysV calling convention, not just against itself.
const abiProbe = `
typedef struct { char reserved[64]; } CUipcMemHandle;
static CUipcMemHandle seen; static unsigned seenFlags;
int cuIpcOpenMemHandle_v2(unsigned long long *pdptr, CUipcMemHandle handle, unsigned int Flags) {
	seen = handle; seenFlags = Flags; *pdptr = 0x7f0000200000ull; return 0;
}
void probe_seen(unsigned char *out, unsigned *flags) {
	for (int i = 0; i < 64; i++) out[i] = (unsigned char)seen.reserved[i];
	*flags = seenFlags;
}
`

func TestIPCOpenABIAgainstGCC(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: the by-value ABI probe needs a C compiler")
	}
	dir := t.TempDir()
	src, so := filepath.Join(dir, "probe.c"), filepath.Join(dir, "libprobe.so")
	if err := os.WriteFile(src, []byte(abiProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O2", "-shared", "-fPIC", "-o", so, src).CombinedOutput(); err != nil {
		t.Skipf("gcc: %v\n%s", err, out)
	}
	d, err := loadDriver(so)
	if err != nil {
		t.Fatal(err)
	}
	if !d.has("cuIpcOpenMemHandle_v2") {
		t.Fatal("probe symbol not bound")
	}
	var h ipcMemHandle
	for i := range h {
		h[i] = byte(0xa0 ^ i*13)
	}
	p, err := d.ipcOpenMemHandle(h, ipcMemLazyEnablePeerAccess)
	if err != nil {
		t.Fatal(err)
	}
	var seen [64]byte
	var flags uint32
	var probeSeen func(out *byte, flags *uint32)
	purego.RegisterLibFunc(&probeSeen, d.handle, "probe_seen")
	probeSeen(&seen[0], &flags)
	if p != 0x7f0000200000 {
		t.Errorf("pdptr = %#x", p)
	}
	if flags != ipcMemLazyEnablePeerAccess {
		t.Errorf("Flags = %d, want %d", flags, ipcMemLazyEnablePeerAccess)
	}
	if seen != h {
		t.Errorf("callee saw handle\n%x\nwant\n%x", seen, h)
	}
}
