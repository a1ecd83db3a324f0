#!/usr/bin/env bash
# Stages the GRAPE-6 cost comparison for the device machine (which has no Rust) in
# .stage/g6/: the C program capi/examples/grape6_hermite.c linked against a CUDA-enabled
# libnbody_c.a, the grape6_reference example (the library's own BlockHermite on the same
# GPU, writing the initial conditions), and go.sh. Then one device call:
#   carry [".stage/g6"], command "bash .stage/g6/go.sh"
#
# With SAPPORO_LIB=/path/to/libsapporo.a the same unmodified program is also linked
# against Sapporo2's GRAPE-6 library (a measurement only: Sapporo2 is never part of the
# project), and go.sh times both, interleaved. Sapporo2 (github.com/treecode/sapporo2)
# builds here with nvcc 11.8 for the H100 as
#   cd sapporo2/lib && make CUDA_TK=/usr NVCCFLAGS="-arch sm_90 -I./include -I./"
# after guarding its own atomicAdd(double *, double) in CUDAKernels/kernels.cu with
# `#if __CUDA_ARCH__ < 600` (CUDA defines it from sm_60 on). Its G6 library exports the
# Fortran spellings only; g6-shim.c below gives the program the C ones over them.
set -euo pipefail
cd "$(dirname "$0")/.."
export CUDA_LIBRARY_PATH=${CUDA_LIBRARY_PATH:-/usr}
cargo build --release -p nbody-capi --features cuda --lib --example grape6_reference
rm -rf .stage/g6 && mkdir -p .stage/g6
cc -O2 -std=c11 -D_DEFAULT_SOURCE -I capi/include capi/examples/grape6_hermite.c target/release/libnbody_c.a \
  -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -lcuda -lstdc++ -o .stage/g6/g6
cp target/release/examples/grape6_reference .stage/g6/
strip .stage/g6/g6 .stage/g6/grape6_reference
if [ -n "${SAPPORO_LIB:-}" ]; then
  cat > .stage/g6/g6-shim.c <<'SHIM'
/* The GRAPE-6 C names over Sapporo2's Fortran ones (arguments by reference). */
typedef double d3[3];
int g6_open_(int *); int g6_close_(int *); int g6_npipes_(void); int g6_set_ti_(int *, double *);
int g6_set_j_particle_(int *, int *, int *, double *, double *, double *, double *, double *, double *, double *,
                       double *);
void g6calc_firsthalf_(int *, int *, int *, int *, d3 *, d3 *, d3 *, d3 *, double *, double *, double *);
int g6calc_lasthalf_(int *, int *, int *, int *, d3 *, d3 *, double *, double *, d3 *, d3 *, double *);
int g6calc_lasthalf2_(int *, int *, int *, int *, d3 *, d3 *, double *, double *, d3 *, d3 *, double *, int *);
int g6_read_neighbour_list_(int *); int g6_get_neighbour_list_(int *, int *, int *, int *, int *);
int g6_open(int id) { return g6_open_(&id); }
int g6_close(int id) { return g6_close_(&id); }
int g6_npipes(void) { return g6_npipes_(); }
int g6_set_ti(int id, double ti) { return g6_set_ti_(&id, &ti); }
int g6_set_j_particle(int id, int address, int index, double tj, double dtj, double mass, double *k18, double *j6,
                      double *a2, double *v, double *x) {
  return g6_set_j_particle_(&id, &address, &index, &tj, &dtj, &mass, k18, j6, a2, v, x);
}
void g6calc_firsthalf(int id, int nj, int ni, int *index, d3 *xi, d3 *vi, d3 *aold, d3 *j6old, double *phiold,
                      double eps2, double *h2) {
  g6calc_firsthalf_(&id, &nj, &ni, index, xi, vi, aold, j6old, phiold, &eps2, h2);
}
int g6calc_lasthalf(int id, int nj, int ni, int *index, d3 *xi, d3 *vi, double eps2, double *h2, d3 *acc, d3 *jerk,
                    double *pot) {
  return g6calc_lasthalf_(&id, &nj, &ni, index, xi, vi, &eps2, h2, acc, jerk, pot);
}
int g6calc_lasthalf2(int id, int nj, int ni, int *index, d3 *xi, d3 *vi, double eps2, double *h2, d3 *acc, d3 *jerk,
                     double *pot, int *nnb) {
  return g6calc_lasthalf2_(&id, &nj, &ni, index, xi, vi, &eps2, h2, acc, jerk, pot, nnb);
}
int g6_read_neighbour_list(int id) { return g6_read_neighbour_list_(&id); }
int g6_get_neighbour_list(int id, int ipipe, int max, int *n, int *list) {
  return g6_get_neighbour_list_(&id, &ipipe, &max, n, list);
}
SHIM
  cc -O2 -std=c11 -D_DEFAULT_SOURCE -I capi/include -c capi/examples/grape6_hermite.c -o /tmp/g6-main.o
  cc -O2 -c .stage/g6/g6-shim.c -o /tmp/g6-shim.o
  g++ /tmp/g6-main.o /tmp/g6-shim.o "$SAPPORO_LIB" -lcuda -fopenmp -lm -o .stage/g6/g6-sapporo
  strip .stage/g6/g6-sapporo
  # Sapporo2 reads its kernels from CUDA/kernels.ptx under the working directory.
  mkdir -p .stage/g6/CUDA && cp "$(dirname "$SAPPORO_LIB")/CUDAKernels/kernels.ptx" .stage/g6/CUDA/
fi
git rev-parse --short HEAD > .stage/g6/commit
cp scripts/gate.sh .stage/g6/
cat > .stage/g6/go.sh <<'RUN'
#!/usr/bin/env bash
# On the device machine: the GRAPE-6 program forces only (bench) and with neighbours
# (bench-nb) on the device j-memory, three times at N = 16,384 and 65,536, interleaved
# with the same program on Sapporo2 where it was staged; the final states compared.
# nbody's runs and checks are steps (gate.sh): the first failure stops it; the last line
# is `N passed, N failed`. Sapporo2's lists leave the particle itself out, so its check
# mode reports every list as a failure: its runs are printed, not gated.
cd "$(dirname "$0")"
. ./gate.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
echo "commit: $(cat commit)"
compare() {
  python3 -c '
import sys, numpy as np
# The first numeric line is the summary line; Sapporo2 prints words of its own first.
rows = lambda f: np.array([[float(x) for x in l.split()] for l in open(f) if l[:1] in "0123456789-"][1:])
a, b = rows(sys.argv[1]), rows(sys.argv[2])
print("final states %s vs %s: max |difference| %.3e (largest coordinate %.3e)" % (sys.argv[1], sys.argv[2], abs(a - b).max(), abs(b).max()))
' "$1" "$2"
}
# The j-memory's conformance checks (packed neighbour lists included), when staged.
if [ -x ./cuda-conformance ]; then
  step "j-memory conformance" bash -c './cuda-conformance j_memory 2>&1 | tail -4'
fi
# A run of the program: its summary line, and no failed check in it.
g6_run() {
  NBODY_GRAPE_EXECUTOR=cuda ./g6 "$@" > /tmp/g6-last.txt || return 1
  local line
  line=$(grep -m1 ^steps /tmp/g6-last.txt) || return 1
  echo "$line"
  [ "$(echo "$line" | awk '{print $6}')" = 0 ]
}
# The device path with neighbours against the program's own double loop (every nearest
# neighbour and list checked), for both libraries.
step "initial conditions, 4096" bash -c './grape6_reference 4096 0.125 /tmp/ics-4096.txt cuda > /dev/null'
step "check mode: every force, nearest neighbour and list of nbody against the double loop" g6_run /tmp/ics-4096.txt 0.02 0.0625 0.015625 0.125
[ -x ./g6-sapporo ] && echo "sapporo2: $(./g6-sapporo /tmp/ics-4096.txt 0.02 0.0625 0.015625 0.125 2>/dev/null | grep -m1 ^steps)"
# Time inside the g6 calls (in_calc), forces only (bench) and with the nearest neighbour
# and every list read each block step (bench-nb): three interleaved rounds per N.
for n in 16384 65536; do
  step "initial conditions, $n" ./grape6_reference $n 0.125 /tmp/ics-$n.txt cuda
  for k in 1 2 3; do
    for mode in bench bench-nb; do
      step "n $n $mode nbody, round $k" bash -c "NBODY_GRAPE_EXECUTOR=cuda ./g6 /tmp/ics-$n.txt 0.02 0.0625 0.015625 0.125 $mode > /tmp/nbody-$mode-$n.txt"
      echo "n $n $mode nbody: $(grep -m1 ^steps /tmp/nbody-$mode-$n.txt)"
      if [ -x ./g6-sapporo ]; then
        ./g6-sapporo /tmp/ics-$n.txt 0.02 0.0625 0.015625 0.125 $mode 2>/dev/null > /tmp/sapporo-$mode-$n.txt
        echo "n $n $mode sapporo2: $(grep -m1 ^steps /tmp/sapporo-$mode-$n.txt)"
      fi
    done
  done
  step "final states with and without neighbours, $n" compare /tmp/nbody-bench-$n.txt /tmp/nbody-bench-nb-$n.txt
  if [ -x ./g6-sapporo ]; then compare /tmp/sapporo-bench-nb-$n.txt /tmp/nbody-bench-nb-$n.txt; fi
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
gate_done
RUN
chmod +x .stage/g6/go.sh
du -sh .stage/g6
