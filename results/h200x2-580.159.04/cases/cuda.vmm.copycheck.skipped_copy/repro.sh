#!/bin/sh
# Re-run just this case with the same backend, kind, ranks and seed.
./specs.test --backend=cuda --alloc=vmm --case=cuda.vmm.copycheck.skipped_copy --seed=1
# or, from a checkout: make run ARGS='--backend=cuda --alloc=vmm --case=cuda.vmm.copycheck.skipped_copy --seed=1'
