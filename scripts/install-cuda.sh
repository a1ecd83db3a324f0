#!/usr/bin/env bash
# Installs Debian's CUDA toolkit (nvcc 11.8 and libcuda for linking) from the non-free
# component, so exec-cuda builds on a machine without a GPU. Idempotent.
set -euo pipefail
if command -v nvcc >/dev/null 2>&1; then
  echo "nvcc already installed: $(nvcc --version | tail -n 1)"
  exit 0
fi
src=/etc/apt/sources.list.d/debian-non-free.sources
if [ ! -f "$src" ]; then
  cat > "$src" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
"$(dirname "$0")/apt-install.sh" nvidia-cuda-toolkit
echo "installed: $(nvcc --version | tail -n 1)"
