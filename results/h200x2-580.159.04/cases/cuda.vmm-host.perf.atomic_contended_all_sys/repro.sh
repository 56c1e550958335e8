#!/bin/sh
# Re-run just this case with the same backend, kind, ranks and seed.
./specs.test --backend=cuda --alloc=vmm-host --case=cuda.vmm-host.perf.atomic_contended_all_sys --seed=1
# or, from a checkout: make run ARGS='--backend=cuda --alloc=vmm-host --case=cuda.vmm-host.perf.atomic_contended_all_sys --seed=1'
