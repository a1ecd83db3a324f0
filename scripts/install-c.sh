#!/usr/bin/env bash
# The C and Fortran compilers and pkg-config the C ABI's example programs are built with
# (cargo test -p nbody-capi). Idempotent.
set -euo pipefail
if command -v cc >/dev/null && command -v gfortran >/dev/null && command -v pkg-config >/dev/null; then
  echo "C toolchain already installed"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends gcc gfortran pkg-config libc6-dev >/dev/null
echo "installed: $(gfortran --version | head -n 1)"
