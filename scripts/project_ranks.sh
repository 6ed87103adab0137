#!/usr/bin/env bash
# Projects weak and strong scaling of a program over 1 to 1,024 MPI ranks with the ranked model
# (`absinthe solve --ranks`), one rank per core of nodes like the machine file's, for each
# network given: the exact optimum of one rank's time, exchanges included (docs/RESULTS.md,
# "Many ranks"). A projection of the model, not a measurement.
#
# Usage: scripts/project_ranks.sh PROGRAM MACHINE [NAME=NETWORK ...]
#   PROGRAM   a program file; its domain's x and y are one rank's sub-domain in weak scaling
#             and the whole domain times 8 along x and y in strong scaling
#   MACHINE   a machine file with a `network:` section (learn --ranks)
#   NETWORK   a network in flow style, e.g. "{latency_us: 0.6, bandwidth_gbs: 25, run_ns: 29}",
#             used in place of the file's (as NAME in the table); without any, the file's own
# Prints a markdown table: per grid and network, one rank's estimate and its exchange share.
set -euo pipefail
program=$1; machine=$2; shift 2
absinthe=${ABSINTHE:-./target/release/absinthe}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
read -r nx ny nz < <(sed -n 's/^domain: *\[\([0-9]*\), *\([0-9]*\), *\([0-9]*\)\].*/\1 \2 \3/p' "$program")
networks=("$@"); [ ${#networks[@]} -eq 0 ] && networks=("file=")
# The inline set of one process on one sub-domain, kept for every grid (the search's own choice
# does not depend on the grid, and searching it again on the large domains is slow).
inline=$("$absinthe" solve "$program" --machine "$machine" --solver dp | sed -n 's/^inlined: \([^(]*\) (.*/\1/p' | tr ' ' ',' | sed 's/,$//')
inline_args=(--no-inline); [ -n "$inline" ] && inline_args=(--inline "$inline")
echo "| network | scaling | ranks | domain | one rank's estimate | of it exchanges |"
echo "|---|---|---|---|---|---|"
for spec in "${networks[@]}"; do
  name=${spec%%=*}; net=${spec#*=}
  m="$work/machine.yaml"
  if [ -n "$net" ]; then
    grep -v '^network:' "$machine" > "$m"; echo "network: $net" >> "$m"
  else
    cp "$machine" "$m"
  fi
  for scaling in weak strong; do
    for grid in 1,1 2,1 2,2 4,4 8,8 16,16 32,16 32,32; do
      px=${grid%,*}; py=${grid#*,}
      if [ $scaling = weak ]; then dx=$((nx * px)); dy=$((ny * py)); else dx=$((nx * 8)); dy=$((ny * 8)); fi
      p="$work/program.yaml"
      sed "s/^domain: .*/domain: [$dx, $dy, $nz]/" "$program" > "$p"
      line=$("$absinthe" solve "$p" --machine "$m" --solver dp "${inline_args[@]}" --ranks "$grid" 2>&1 >/dev/null | grep '^ranks ' || true)
      est=$(sed -n 's/.* per rank: \([0-9.]*\) us per run.*/\1/p' <<<"$line")
      exch=$(sed -n 's/.*at most \([0-9.]*\) us of it.*/\1/p' <<<"$line")
      if [ -z "$est" ] && [ "$grid" = 1,1 ]; then
        # One rank is never refused: the solve failed, or its line changed.
        echo "error: solve --ranks 1,1 on ${dx}x${dy}x${nz} gave no estimate: ${line:-no 'ranks' line}" >&2; exit 1
      fi
      if [ -z "$est" ]; then echo "| $name | $scaling | ${px}x${py} | ${dx}x${dy}x${nz} | refused | |"; continue; fi
      share=$(awk -v e="$exch" -v t="$est" 'BEGIN { printf "%.1f%%", 100 * e / t }')
      echo "| $name | $scaling | ${px}x${py} | ${dx}x${dy}x${nz} | $est us | $share |"
    done
  done
done
