#!/usr/bin/env bash
# Installs, from Debian 12's own archive, everything dynvm's build, tests and benchmarks
# need. Idempotent: packages already present are skipped, and apt is not touched at all
# when nothing is missing. Nothing is downloaded from anywhere but Debian's mirrors.
set -euo pipefail

PACKAGES=(
  # build
  cmake ninja-build g++ make pkg-config
  # kernels: LLVM 16 (its CMake config needs libzstd-dev), linker for generated objects
  llvm-16-dev libzstd-dev lld-16
  # runtime
  libtbb-dev libdlpack-dev
  # serializer
  libcereal-dev
  # tuner cost model (the CMake config points at /usr/bin/xgboost: install it too) and its
  # records (JSON lines)
  libxgboost-dev xgboost nlohmann-json3-dev
  # vmserve: HTTP server (its tests drive it with curl)
  libcpp-httplib-dev curl
  # vmbench's test renders the SVG it writes
  librsvg2-bin
  # the Python module (python/): pybind11 and the interpreter's headers; its tests
  pybind11-dev python3-dev python3-pytest
  # ONNX frontend
  libonnx-dev libprotobuf-dev protobuf-compiler
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev libdnnl-dev
  python3 python3-numpy python3-onnx
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
