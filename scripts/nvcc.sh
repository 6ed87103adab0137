#!/usr/bin/env bash
# Prints the path of an `nvcc` that compiles for sm_90 without a GPU, installing the CUDA
# compiler from PyPI when missing: nvidia-cuda-nvcc, nvidia-cuda-runtime and nvidia-cuda-cccl
# (CUDA 13; they pull in nvidia-nvvm and nvidia-cuda-crt) into a virtual environment under the
# build directory (${CARGO_TARGET_DIR:-target}/cuda-venv). The CUDA 12 wheels
# (nvidia-cuda-nvcc-cu12) ship only ptxas, not nvcc, so they cannot be used. The printed path
# is a small wrapper around the wheel's nvcc. Idempotent: a second run only prints.
# An `nvcc` already on PATH is used as is (set ABSINTHE_NVCC_FROM_PYPI=1 to ignore it).
# Exit status 2 (and a reason on stderr) when no nvcc can be had.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="$target/cuda-venv"
wrapper="$venv/bin/absinthe-nvcc"

if [ -z "${ABSINTHE_NVCC_FROM_PYPI:-}" ] && command -v nvcc >/dev/null 2>&1; then
  command -v nvcc
  exit 0
fi
if [ -x "$wrapper" ]; then
  echo "$wrapper"
  exit 0
fi

python="$(command -v python3 || true)"
if [ -z "$python" ]; then
  echo "nvcc.sh: python3 not found, cannot install nvcc from PyPI" >&2
  exit 2
fi
mkdir -p "$target"
lock="$target/cuda-venv.lock"
exec 9>"$lock"
flock 9
if [ ! -x "$wrapper" ]; then
  echo "nvcc.sh: installing the CUDA compiler from PyPI into $venv" >&2
  rm -rf "$venv.tmp"
  "$python" -m venv "$venv.tmp" >&2
  if ! "$venv.tmp/bin/pip" install -q --disable-pip-version-check \
      "nvidia-cuda-nvcc>=13,<14" "nvidia-cuda-runtime>=13,<14" "nvidia-cuda-cccl>=13,<14" >&2; then
    echo "nvcc.sh: pip could not install the CUDA compiler wheels" >&2
    rm -rf "$venv.tmp"
    exit 2
  fi
  rm -rf "$venv"
  mv "$venv.tmp" "$venv"
  # The venv moved: find the wheels' directories under its final path.
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  nvcc="$(ls "$site"/nvidia/cu*/bin/nvcc 2>/dev/null | head -n 1)"
  if [ -z "$nvcc" ]; then
    echo "nvcc.sh: the installed wheels contain no bin/nvcc under $site/nvidia" >&2
    exit 2
  fi
  top="$(dirname "$(dirname "$nvcc")")"
  cat > "$wrapper.tmp" <<WRAP
#!/usr/bin/env bash
# nvcc from the PyPI wheels (written by scripts/nvcc.sh); CCCL headers may sit beside it.
exec "$nvcc" -isystem "$top/include/cccl" "\$@"
WRAP
  chmod +x "$wrapper.tmp"
  mv "$wrapper.tmp" "$wrapper"
fi
echo "$wrapper"
