package kernels

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cudaKindRecipe is docs/ARCHITECTURE.md's "… a CUDA allocation kind" done
// for a new kind, vmm-ro (a copy of vmm): one edit per file the recipe
// names, each an insertion after an anchor today's file holds.
var cudaKindRecipe = []recipeEdit{
	{"harness/backends/cuda.go", "\tDmaBuf  Kind = \"dmabuf\"\n", "\tVMMRO   Kind = \"vmm-ro\"\n"},
	{"harness/backends/cuda.go", "\t\t{Name: DmaBuf, DeviceMemory: true, ExportOnly: true},\n", "\t\t{Name: VMMRO, DeviceMemory: true},\n"},
	{"rank/cuda/kinds.go", "\tKindDmaBuf  = \"dmabuf\"\n", "\tKindVMMRO   = \"vmm-ro\"\n"},
	{"rank/cuda/kinds.go", "\t\tfree: func(d *driver, buf *buffer) []error { return []error{d.check(d.cuMemFree(buf.addr))} }},\n",
		"\t\t{name: KindVMMRO, vmm: true, alloc: (*Backend).allocVMM, imp: importVMMFd, free: freeVMM},\n"},
}

// TestCUDAKindRecipeRuns (issue 51 item 4) runs docs/ARCHITECTURE.md's
// "… a CUDA allocation kind" recipe in a copy of the module: the files it
// changes are exactly the recipe's, the row tests hold there
// (TestMatrixMatchesBackends: the rank's rows equal the harness's;
// TestKinds: every rank row whole), and the CUDA catalogue (specs.test
// --backend=cuda --list, which loads no driver) has the new kind's cases.
// The harness's row alone, without the rank's, must fail
// TestMatrixMatchesBackends. (Alloc and Import of the kind run only on a
// GPU.)
func TestCUDAKindRecipeRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the module and builds the suite (about a minute on two cores)")
	}
	if getenv("P2PAT_RECIPE_RUN") != "" {
		t.Skip("inside a recipe run's copy")
	}
	root := repoRoot(t)
	named := sectionPaths(t, root, "a CUDA allocation kind")
	dir := t.TempDir()
	copyModule(t, root, dir)
	half := filepath.Join(t.TempDir(), "half")
	copyModule(t, root, half)
	if changed := applyEdits(t, dir, cudaKindRecipe); !slices.Equal(changed, named) {
		t.Errorf("the recipe run changed %v; docs/ARCHITECTURE.md's recipe names %v", changed, named)
	}
	if out, ok := goIn(t, dir, "test", "-count=1", "-run", "^TestMatrixMatchesBackends$", "./harness"); !ok {
		t.Errorf("with the new kind, TestMatrixMatchesBackends fails:\n%s", out)
	}
	if out, ok := goIn(t, dir, "test", "-count=1", "-run", "^TestKinds$", "./rank/cuda"); !ok {
		t.Errorf("with the new kind, TestKinds fails:\n%s", out)
	}
	bin := filepath.Join(t.TempDir(), "specs.test")
	if out, ok := goIn(t, dir, "test", "-c", "-o", bin, "./specs"); !ok {
		t.Fatalf("go test -c ./specs: %s", out)
	}
	list := exec.Command(bin, "--backend=cuda", "--list")
	list.Dir = dir
	out, _ := list.CombinedOutput()
	if !strings.Contains(string(out), "cuda.vmm-ro.") || !strings.Contains(string(out), "cuda.vmm.") {
		t.Errorf("specs.test --backend=cuda --list has no cuda.vmm-ro cases:\n%.2000s", out)
	}

	var harnessOnly = cudaKindRecipe[:2]
	applyEdits(t, half, harnessOnly)
	if out, ok := goIn(t, half, "test", "-count=1", "-run", "^TestMatrixMatchesBackends$", "./harness"); ok || !strings.Contains(out, "vmm-ro") {
		t.Errorf("the harness's row without the rank's passed TestMatrixMatchesBackends (ok %v):\n%s", ok, out)
	}
}
