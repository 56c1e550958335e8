package specs

import (
	"time"

	"p2patomics/harness"
	"p2patomics/harness/backends"
	"p2patomics/harness/report"
	"p2patomics/kernels"
)

// hipVmemKind is the hip backend's HSA fine-grained vmem allocation
// (rank/hip hsavmem.go): hsa_amd_vmem_* from the FINE_GRAINED pool, shared
// as a dma-buf, with kernels launched on it through hipModuleLaunchKernel.
// It is not a matrix kind: only this case asks for it.
const hipVmemKind = "hsa-fine"

// hipVmem is the seed's exact path in one case (IRIS-FIX
// p2p_atomics_hsa.cpp): memory from HSA's fine-grained VRAM pool on rank
// 0's GPU, peer-imported through dma-buf, and the system-scope f32 add at
// acq_rel launched on it through HIP by every rank (CLR's packet fences and
// kernarg handling on HSA memory; the hsa backend dispatches raw AQL and the
// hip backend's kinds are HIP VMem, which CLR takes from the coarse pool).
// One case under the hip backend's first kind, never multiplied over the
// matrix: a kind of its own would add a matrix row whose every other case
// repeats hsa.fine's memory or hip's dispatch (docs/AMD.md, "HIP on HSA
// vmem"). The seed reports it working: expected pass.
func (b *builder) hipVmem() {
	if row := backends.Lookup(b.backend); row == nil || !row.HSAVmemCase || b.kind != harness.Matrix[b.backend][0] {
		return
	}
	k := kernels.MustLookup(kernels.Name(kernels.OpAdd, kernels.F32, kernels.AcqRel, kernels.Sys))
	labels := append([]report.Label{LabelAtomics}, facets(k)...)
	if k.Info {
		labels = append(labels, LabelInfo)
	}
	b.add(Spec{Name: "hsavmem", Variant: k.Name, Ranks: b.o.Ranks, Expected: report.Pass,
		Labels: labels, Timeout: 60 * time.Second,
		Run: func(c *harness.Ctx) error {
			m, err := c.SharedKind(0, hipVmemKind, 1<<20, true)
			if err != nil {
				return err
			}
			return runCounterOn(c, k, m, 0)
		}})
}
