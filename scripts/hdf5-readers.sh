#!/usr/bin/env bash
# Writes a Gadget HDF5 snapshot with the command and opens it with yt and pynbody from
# PyPI (scripts/hdf5-readers.py checks what they read). When they do not install, it
# fails: CI never passes by skipping it. The command is built with every feature, as
# the README's test command builds it (no second build of another feature set).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
if ! "$work/venv/bin/pip" install -q yt pynbody h5py >"$work/pip.log" 2>&1; then
  echo "FAILED: yt and pynbody did not install from PyPI ($(tail -n 1 "$work/pip.log"))"
  exit 1
fi
cargo run -q --all-features --bin nbody -- --n 2000 --t-end 0.0625 --quiet --format hdf5 \
  --executor cpu:1 --out "$work/out" >/dev/null
"$work/venv/bin/python" scripts/hdf5-readers.py "$work/out/snapshot-00001.hdf5"
