#!/usr/bin/env bash
# Installs Debian's Open MPI (mpirun, libmpi, headers) and libclang, which the `mpi`
# crate's build needs to generate its bindings. Idempotent.
set -euo pipefail
if command -v mpirun >/dev/null 2>&1 && [ -e /usr/include/x86_64-linux-gnu/mpi/mpi.h -o -e /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] \
  && ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1; then
  echo "Open MPI already installed: $(mpirun --version | head -n 1)"
  exit 0
fi
"$(dirname "$0")/apt-install.sh" libopenmpi-dev openmpi-bin libclang-dev
echo "installed: $(mpirun --version | head -n 1)"
