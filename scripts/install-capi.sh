#!/usr/bin/env bash
# Builds the C library (release) and installs it for C, C++ and Fortran projects:
#   PREFIX/lib/libnbody_c.{so,a}, PREFIX/include/nbody.h, PREFIX/lib/pkgconfig/nbody.pc,
#   and NBODY6's regular-force library: PREFIX/lib/libnbody_gpunb_<code>.a, PREFIX/include/gpunb.h
#   (with NBODY6++GPU's irregular force, PREFIX/lib/libnbody_irr_nbody6pp.a)
# Usage: scripts/install-capi.sh [PREFIX] [--features cuda]   (PREFIX defaults to /usr/local)
# Then: cc app.c $(pkg-config --cflags --libs nbody)    (add --static for libnbody_c.a)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-/usr/local}
shift || true
cargo build --release -p nbody-capi "$@"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
NBODY_C_LIB_DIR=$PWD/target/release scripts/build-gpunb.sh
cp target/release/libnbody_c.so target/release/libnbody_c.a target/release/libnbody_gpunb_*.a target/release/libnbody_irr_*.a "$prefix/lib/"
cp capi/include/nbody.h capi/include/gpunb.h "$prefix/include/"
private="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
case "$*" in *cuda*) private="$private -lcuda -lstdc++" ;; esac
sed -e "s#@PREFIX@#$prefix#" -e "s#@VERSION@#$version#" -e "s#@PRIVATE@#$private#" capi/nbody.pc.in > "$prefix/lib/pkgconfig/nbody.pc"
echo "installed nbody $version in $prefix (pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig)"
