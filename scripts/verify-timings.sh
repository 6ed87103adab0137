#!/usr/bin/env bash
# How long `absinthe verify` takes per step for programs of 2, 4, 8 and 16 stencils, and how
# long Z3 takes as an optimiser (`compare --solvers highs,z3`). A report, not a test.
#   scripts/verify-timings.sh [TIME_LIMIT_SECONDS]      (default 60 s per Z3 query)
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-60}
bin=./target/release/absinthe
[ -x "$bin" ] || cargo build --release -q
machine=machines/default.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '| program | stencils | step | verdict | seconds |\n|---|---|---|---|---|\n'
for p in example2 hdiff chain8 chain16; do
  n=$(grep -c '^  - name:' "configs/$p.yaml")
  "$bin" solve "configs/$p.yaml" --machine "$machine" --format yaml > "$tmp/$p.yaml"
  "$bin" verify "configs/$p.yaml" --machine "$machine" --solution "$tmp/$p.yaml" \
      --time-limit "$limit" --format json > "$tmp/$p.json" || true
  python3 - "$tmp/$p.json" "$p" "$n" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for step in report.get("steps", []):
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {step.get('step')} | {step.get('verdict')} | {step.get('seconds', 0):.2f} |")
PY
  start=$(date +%s.%N)
  "$bin" compare "configs/$p.yaml" --machine "$machine" --solvers z3 --time-limit "$limit" \
      --format json > "$tmp/$p.compare.json" 2>/dev/null || true
  verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows"][0]["status"])' \
      "$tmp/$p.compare.json" 2>/dev/null || echo "no answer")
  end=$(date +%s.%N)
  printf '| %s | %s | z3 optimise | %s | %.2f |\n' "$p" "$n" "$verdict" "$(echo "$end - $start" | bc)"
done
