#!/usr/bin/env bash
# Installs the Debian packages absinthe's two commands (`make demo`, `make test`) need, when
# missing, and nothing else. Safe to run repeatedly: with everything present it installs nothing.
#
#   package             why
#   pkg-config          finds CBC for coin_cbc's build script
#   cmake               HiGHS is built from source by highs-sys
#   g++                 the generated OpenMP kernels, HiGHS, CBC's C++ glue
#   libgomp1            OpenMP runtime for the generated kernels (g++ pulls it in, named anyway)
#   coinor-libcbc-dev   the CBC backend
#   libz3-dev           the Z3 backend (`verify`, `compare`)
#   libclang-dev        bindgen (highs-sys, z3-sys) loads libclang.so; libclang-cpp (C++ API,
#                       often installed alone) is a *different* library and does not count
#   python3-venv        the test suite installs nvcc from PyPI into a virtual environment
#   fonts-dejavu-core   the font `bench --plot` and `learn` draw their plots with
#   openmpi-bin         `mpirun`, which runs `codegen --ranks` harnesses over MPI ranks
#   libopenmpi-dev      `mpicxx` and the MPI headers the decomposed kernels compile against
#
# A package counts as present only when dpkg says it is installed ("install ok installed").
#
# Usage: scripts/setup.sh [--dry-run]
#   --dry-run   print the packages that would be installed (one line, space separated; empty when
#               none) and exit 0 without installing anything.
# Environment (for tests): ABSINTHE_DPKG_QUERY replaces `dpkg-query`, ABSINTHE_SETUP_UID replaces
# `id -u`.
set -euo pipefail

required=(pkg-config cmake g++ libgomp1 coinor-libcbc-dev libz3-dev libclang-dev python3-venv
  fonts-dejavu-core openmpi-bin libopenmpi-dev)

dry_run=0
case "${1:-}" in
  --dry-run) dry_run=1 ;;
  "") ;;
  -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

dpkg_query="${ABSINTHE_DPKG_QUERY:-dpkg-query}"
installed() {
  local status
  status="$("$dpkg_query" -W -f='${Status}' "$1" 2>/dev/null || true)"
  [ "$status" = "install ok installed" ]
}

missing=()
for pkg in "${required[@]}"; do
  installed "$pkg" || missing+=("$pkg")
done

if [ "$dry_run" -eq 1 ]; then
  echo "${missing[*]:-}"
  exit 0
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "absinthe setup: installing ${missing[*]}" >&2
uid="${ABSINTHE_SETUP_UID:-$(id -u)}"
if [ "$uid" -eq 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo apt-get update -qq
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "absinthe setup: missing system packages: ${missing[*]}" >&2
  echo "  install them as root:  apt-get install ${missing[*]}" >&2
  exit 1
fi
