#!/usr/bin/env bash
# Times the generated CUDA on a GPU: the model's optimum against its variants, each verified
# against the CPU reference, with the achieved bandwidth against the device's measured copy
# bandwidth. Three steps, so that the GPU machine needs only the driver:
#
#   scripts/gpu_bench.sh generate DIR PROGRAM.yaml...   (absinthe writes the CUDA sources)
#   scripts/gpu_bench.sh build DIR                      (nvcc: two builds of every variant)
#   scripts/gpu_bench.sh run DIR                        (on the GPU machine: run, report)
#
# `generate` writes, per program and per size in $SIZES (default "256x256x60 512x512x80"), one
# directory per variant with `absinthe codegen --target cuda --harness` on $MACHINE (default
# machines/h100.yaml), the variants in $VARIANTS (default all): opt (the model's optimum,
# groups streaming along z), staged (--stage: arrays read at x-y offsets staged in shared
# memory), unstreamed (--no-stream: whole tiles),
# buffered (--no-inline: every stencil stored in a tile buffer, streamed),
# buffered_unstreamed (--no-inline --no-stream: the original schedule, full 3-D tile
# buffers), unfused (--fix-groups 0,1,...), deep and deep_staged (at most nz/10 tiles along
# z, so that every block streams at least ten planes; not staged and staged).
# `build` compiles each variant twice with nvcc ($JOBS at a time, default the cores): the timed
# build (FMA, verified within the harness's tolerance) and the exact build (--fmad=false, bit
# for bit), with -Xptxas -v so that spills are reported. `run` runs both (building what is
# missing) and prints one JSON line per variant: the spills, the model's predicted seconds (the
# estimate in the variant's solution.yaml, solved by `generate` with the variant's constraints
# and generated from), the exact build's verification, the timed build's verification and
# CUDA-event timing, the compulsory bandwidth and its fraction of the copy bandwidth.
# nvcc: $NVCC, else the one on PATH, else scripts/nvcc.sh (PyPI). Architecture: $ARCH (sm_90).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
usage() {
  sed -n '2,/^set /p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2
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
      deep="$nx,$ny,$(( nz / 10 > 0 ? nz / 10 : 1 ))"
      for variant in ${VARIANTS:-opt staged unstreamed buffered buffered_unstreamed unfused deep deep_staged}; do
        case "$variant" in
        opt) extra=() ;;
        staged) extra=(--stage) ;;
        deep) extra=(--tiles-max "$deep") ;;
        deep_staged) extra=(--tiles-max "$deep" --stage) ;;
        unstreamed) extra=(--no-stream) ;;
        buffered) extra=(--no-inline) ;;
        buffered_unstreamed) extra=(--no-inline --no-stream) ;;
        unfused) extra=(--fix-groups "$unfused") ;;
        *) echo "gpu_bench.sh: unknown variant $variant" >&2; exit 2 ;;
        esac
        # The configuration once, solved with the variant's constraints (--stage changes the
        # code, not the configuration); its estimate is what `run` reports as predicted.
        solve=() stage=()
        for a in "${extra[@]}"; do
          if [ "$a" = --stage ]; then stage=(--stage); else solve+=("$a"); fi
        done
        mkdir -p "$case_dir/$variant"
        "$absinthe" solve "$case_dir/program.yaml" --machine "$machine" "${solve[@]}" \
          -o "$case_dir/$variant/solution.yaml" >>"$case_dir/codegen.log" 2>&1
        "$absinthe" codegen "$case_dir/program.yaml" --target cuda --machine "$machine" \
          --solution "$case_dir/$variant/solution.yaml" --harness "${stage[@]}" \
          -o "$case_dir/$variant" 2>>"$case_dir/codegen.log"
      done
    done
  done
  echo "gpu_bench.sh: sources under $dir; on the GPU machine: scripts/gpu_bench.sh run $dir" >&2
  ;;
build | run)
  nvcc="${NVCC:-}"
  [ -n "$nvcc" ] || nvcc="$(command -v nvcc || bash "$root/scripts/nvcc.sh" || true)"
  arch="${ARCH:-sm_90}"
  # One build of one variant: `compile CU exact|timed`, skipped when its binary is newer (by
  # `run`: when it exists, since copying the tree to a GPU machine may reorder timestamps).
  compile() {
    local cu="$1" kind="$2" vdir flags
    vdir="$(dirname "$cu")"
    if [ "$kind" = exact ]; then
      flags=(--fmad=false -Xcompiler -fopenmp,-ffp-contract=off)
    else
      flags=(-DABSINTHE_FMA_BUILD -Xcompiler -fopenmp)
    fi
    [ "$vdir/bench_$kind" -nt "$cu" ] && return 0
    [ "$step" = run ] && [ -x "$vdir/bench_$kind" ] && return 0
    [ -n "$nvcc" ] || { echo "gpu_bench.sh: no nvcc (set NVCC)" >&2; return 1; }
    "$nvcc" -O3 -arch="$arch" "${flags[@]}" -Xptxas -v "$cu" -lgomp -o "$vdir/bench_$kind" \
      >"$vdir/nvcc_$kind.log" 2>&1
  }
  export -f compile
  export nvcc arch step
  sources=("$dir"/*/*/*.cu)
  [ -e "${sources[0]}" ] || { echo "gpu_bench.sh: no sources under $dir (run generate)" >&2; exit 2; }
  if [ "$step" = build ]; then
    printf '%s\n' "${sources[@]}" | sed 's/$/ timed/; p; s/ timed$/ exact/' \
      | xargs -P "${JOBS:-$(nproc)}" -L 1 bash -c 'compile "$0" "$1" || echo "gpu_bench.sh: nvcc failed on $0 ($1)" >&2'
    exit 0
  fi
  status=0
  for cu in "${sources[@]}"; do
    vdir="$(dirname "$cu")"
    variant="$(basename "$vdir")"
    case_name="$(basename "$(dirname "$vdir")")"
    if ! compile "$cu" timed || ! compile "$cu" exact; then
      echo "{\"case\":\"$case_name\",\"variant\":\"$variant\",\"error\":\"nvcc failed, see $vdir/nvcc_*.log\"}"
      status=1
      continue
    fi
    # Binaries built elsewhere come without the logs: no spills read, and no failure.
    spills="$({ grep -Eho '[0-9]+ bytes spill stores' "$vdir"/nvcc_timed.log \
      "$vdir"/nvcc_exact.log 2>/dev/null || true; } | awk '{s += $1} END {print s + 0}')"
    exact="$("$vdir/bench_exact" 2 2>&1)" || status=1
    # sed, not grep: a binary that printed no result line (one that crashed) gives null, and
    # the run goes on to the next variant.
    exact="$(sed -n 's/.*ABSINTHE_RESULT //p' <<<"$exact" | head -n 1)"
    out="$("$vdir/bench_timed" "${RUNS:-64}" 2>&1)" || status=1
    result="$(sed -n 's/.*ABSINTHE_RESULT //p' <<<"$out" | head -n 1)"
    timing="$(sed -n 's/.*ABSINTHE_CUDA_TIMING //p' <<<"$out" | head -n 1)"
    # The model's estimate (seconds) from the variant's solution file, when generate wrote one.
    predicted="$(sed -n 's/^estimate_seconds: *//p' "$vdir/solution.yaml" 2>/dev/null | head -n 1)"
    echo "{\"case\":\"$case_name\",\"variant\":\"$variant\",\"spill_store_bytes\":$spills,\"predicted_seconds\":${predicted:-null},\"exact\":${exact:-null},\"result\":${result:-null},\"timing\":${timing:-null}}"
  done
  exit "$status"
  ;;
*)
  usage
  ;;
esac
