#!/usr/bin/env bash
# The C and Fortran compilers and pkg-config the C ABI's example programs are built with
# (cargo test -p nbody-capi). Idempotent.
set -euo pipefail
if command -v cc >/dev/null && command -v gfortran >/dev/null && command -v pkg-config >/dev/null; then
  echo "C toolchain already installed"
  exit 0
fi
"$(dirname "$0")/apt-install.sh" gcc gfortran pkg-config libc6-dev
echo "installed: $(gfortran --version | head -n 1)"
