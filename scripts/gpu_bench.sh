#!/usr/bin/env bash
# Times the generated CUDA on a GPU: z-streamed (`opt`) against whole-tile (`unstreamed`) and
# unfused kernels, each verified against the CPU reference, with the achieved bandwidth against
# the device's measured copy bandwidth. Two steps, so the GPU machine needs only nvcc:
#
#   scripts/gpu_bench.sh generate DIR PROGRAM.yaml...   (here: absinthe writes the CUDA sources)
#   scripts/gpu_bench.sh run DIR [--compile-only]       (on the GPU machine: nvcc, run, report)
#
# `generate` writes, per program and per size in $SIZES (default "256x256x60 512x512x80"), one
# directory per variant with `absinthe codegen --target cuda --harness` on $MACHINE (default
# machines/h100.yaml), the variants in $VARIANTS (default all): opt (the model's optimum,
# groups streaming along z), unstreamed (--no-stream: whole tiles), buffered (--no-inline:
# every stencil stored in a tile buffer, streamed), buffered_unstreamed (--no-inline
# --no-stream: the original schedule, full 3-D tile buffers) and unfused (--fix-groups 0,1,...).
# `run` builds each with nvcc (the timed build: FMA, verified within the harness's tolerance;
# ABSINTHE_EXACT=1 for the exact build, bit for bit) and prints one JSON line per variant:
# the harness's verification, the CUDA-event timing, the compulsory bandwidth and its fraction of
# the copy bandwidth. --compile-only stops after nvcc (with -Xptxas -v: spills are reported).
# nvcc: $NVCC, else the one on PATH, else scripts/nvcc.sh (PyPI).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
usage() {
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[ $# -ge 2 ] || usage
step="$1"
dir="$2"
shift 2

case "$step" in
generate)
  [ $# -ge 1 ] || usage
  # $ABSINTHE, else the newer of the release and debug builds.
  absinthe="${ABSINTHE:-}"
  if [ -z "$absinthe" ]; then
    release="$root/target/release/absinthe" debug="$root/target/debug/absinthe"
    if [ -x "$release" ] && { [ ! -x "$debug" ] || [ "$release" -nt "$debug" ]; }; then
      absinthe="$release"
    else
      absinthe="$debug"
    fi
  fi
  [ -x "$absinthe" ] || { echo "gpu_bench.sh: build absinthe first (cargo build --release)" >&2; exit 2; }
  machine="${MACHINE:-$root/machines/h100.yaml}"
  mkdir -p "$dir"
  for program in "$@"; do
    [ -f "$program" ] || { echo "gpu_bench.sh: no program file $program" >&2; exit 2; }
    stem="$(basename "$program" .yaml)"
    for size in ${SIZES:-256x256x60 512x512x80}; do
      IFS=x read -r nx ny nz <<<"$size"
      case_dir="$dir/${stem}_$size"
      mkdir -p "$case_dir"
      # The same program at this size (the domain line rewritten, nothing else).
      sed -E "s/^domain:.*/domain: [$nx, $ny, $nz]/" "$program" >"$case_dir/program.yaml"
      grep -q "^domain: \[$nx, $ny, $nz\]" "$case_dir/program.yaml" \
        || { echo "gpu_bench.sh: $program has no top-level 'domain:' line" >&2; exit 2; }
      n="$(grep -cE '^  - name:' "$case_dir/program.yaml")"
      unfused="$(seq -s, 0 $((n - 1)))"
      for variant in ${VARIANTS:-opt unstreamed buffered buffered_unstreamed unfused}; do
        case "$variant" in
        opt) extra=() ;;
        unstreamed) extra=(--no-stream) ;;
        buffered) extra=(--no-inline) ;;
        buffered_unstreamed) extra=(--no-inline --no-stream) ;;
        unfused) extra=(--fix-groups "$unfused") ;;
        *) echo "gpu_bench.sh: unknown variant $variant" >&2; exit 2 ;;
        esac
        "$absinthe" codegen "$case_dir/program.yaml" --target cuda --machine "$machine" \
          --harness "${extra[@]}" -o "$case_dir/$variant" 2>>"$case_dir/codegen.log"
      done
    done
  done
  echo "gpu_bench.sh: sources under $dir; on the GPU machine: scripts/gpu_bench.sh run $dir" >&2
  ;;
run)
  compile_only=0
  [ "${1:-}" = "--compile-only" ] && compile_only=1
  nvcc="${NVCC:-}"
  [ -n "$nvcc" ] || nvcc="$(command -v nvcc || bash "$root/scripts/nvcc.sh")"
  if [ "${ABSINTHE_EXACT:-0}" = 1 ]; then
    flags=(--fmad=false -Xcompiler -fopenmp,-ffp-contract=off)
  else
    flags=(-DABSINTHE_FMA_BUILD -Xcompiler -fopenmp)
  fi
  arch="${ARCH:-sm_90}"
  status=0
  for cu in "$dir"/*/*/*.cu; do
    vdir="$(dirname "$cu")"
    variant="$(basename "$vdir")"
    case_name="$(basename "$(dirname "$vdir")")"
    exe="$vdir/bench_cuda"
    if ! "$nvcc" -O3 -arch="$arch" "${flags[@]}" -Xptxas -v "$cu" -lgomp -o "$exe" >"$vdir/nvcc.log" 2>&1; then
      echo "{\"case\":\"$case_name\",\"variant\":\"$variant\",\"error\":\"nvcc failed, see $vdir/nvcc.log\"}"
      status=1
      continue
    fi
    spills="$(grep -Eo '[0-9]+ bytes spill stores' "$vdir/nvcc.log" | awk '{s += $1} END {print s + 0}')"
    if [ "$compile_only" = 1 ]; then
      echo "{\"case\":\"$case_name\",\"variant\":\"$variant\",\"compiled\":true,\"spill_store_bytes\":$spills}"
      continue
    fi
    out="$("$exe" "${RUNS:-64}" 2>&1)" || status=1
    result="$(grep -o 'ABSINTHE_RESULT .*' <<<"$out" | head -n 1 | cut -d' ' -f2-)"
    timing="$(grep -o 'ABSINTHE_CUDA_TIMING .*' <<<"$out" | head -n 1 | cut -d' ' -f2-)"
    echo "{\"case\":\"$case_name\",\"variant\":\"$variant\",\"spill_store_bytes\":$spills,\"result\":${result:-null},\"timing\":${timing:-null}}"
  done
  exit "$status"
  ;;
*)
  usage
  ;;
esac
