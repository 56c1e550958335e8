#!/bin/sh
# Re-run just this case with the same backend, kind, ranks and seed.
./specs.test --backend=cuda --alloc=vmm --case=cuda.vmm.cpugpu.add_u64_relaxed_sys --seed=1
# or, from a checkout: make run ARGS='--backend=cuda --alloc=vmm --case=cuda.vmm.cpugpu.add_u64_relaxed_sys --seed=1'
