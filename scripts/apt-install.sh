#!/usr/bin/env bash
# Installs Debian packages quietly, without their recommendations: what every
# install-*.sh script does once it has found something missing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$@" >/dev/null
