#!/usr/bin/env bash
# HDF5 for the `hdf5` feature (Gadget snapshots: hdf5-metno links Debian's libhdf5,
# found through pkg-config) and h5py, which the tests read written snapshots back with.
# (Debian's, for /usr/bin/python3). Idempotent.
set -euo pipefail
if pkg-config --exists hdf5 2>/dev/null && /usr/bin/python3 -c "import h5py" 2>/dev/null; then
  echo "HDF5 and h5py already installed"
  exit 0
fi
"$(dirname "$0")/apt-install.sh" libhdf5-dev pkg-config python3-h5py
echo "installed: HDF5 $(pkg-config --modversion hdf5), h5py $(/usr/bin/python3 -c 'import h5py; print(h5py.__version__)')"
