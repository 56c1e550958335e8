#!/bin/sh
# Re-run just this case with the same backend, kind, ranks and seed.
./specs.test --backend=cuda --alloc=vmm-host --case=cuda.vmm-host.pairs.add_u64_relaxed_sys.r0r1 --seed=1
# or, from a checkout: make run ARGS='--backend=cuda --alloc=vmm-host --case=cuda.vmm-host.pairs.add_u64_relaxed_sys.r0r1 --seed=1'
