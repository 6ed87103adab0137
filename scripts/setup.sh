#!/usr/bin/env bash
# Installs what absinthe's build needs on a fresh Debian machine, when missing:
# CBC (coinor-libcbc-dev), cmake (HiGHS is built from source), libclang (bindgen), libz3,
# pkg-config, and a C++ compiler with OpenMP. Safe to run repeatedly: it installs nothing when
# everything is present.
set -euo pipefail

missing=()
have_pkg() { pkg-config --exists "$1" 2>/dev/null; }
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
have_pkg cbc || missing+=(coinor-libcbc-dev)
[ -e /usr/include/z3.h ] || missing+=(libz3-dev)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || ls /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "absinthe setup: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo apt-get update -qq
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "absinthe setup: missing system packages: ${missing[*]}" >&2
  echo "  install them as root:  apt-get install ${missing[*]}" >&2
  exit 1
fi
