#!/usr/bin/env bash
# Runs the fuzz targets on stable (`-s none`, with their dictionaries), all at once, for a
# time budget each, then prints each target's last status line (execs and exec/s).
#
#   fuzz/run.sh [SECONDS] [TARGET...]      default: 60 s, every target
#
# New inputs go to fuzz/work/<target>/ (ignored by git); the committed seeds in
# fuzz/corpus/<target>/ are read, never written. A crash leaves its input in
# fuzz/artifacts/<target>/: minimize it (`cargo fuzz tmin -s none <target> <file>`) and commit it
# to fuzz/regressions/<target>/, where `cargo test --test statelog wal_fuzz_corpus::` replays it forever.
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-60}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  targets=(record_decode segment_recover asl_parse_validate jsonpath_eval intrinsic_parse)
fi

command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
for target in "${targets[@]}"; do cargo fuzz build -s none "$target"; done

pids=()
for target in "${targets[@]}"; do
  mkdir -p "work/$target" "artifacts/$target"
  cargo fuzz run -s none "$target" "work/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -dict="$target.dict" -print_final_stats=1 \
    >"work/$target.log" 2>&1 &
  pids+=("$!")
done

status=0
for i in "${!targets[@]}"; do
  if ! wait "${pids[$i]}"; then
    status=1
    echo "== ${targets[$i]}: FAILED (see fuzz/work/${targets[$i]}.log and fuzz/artifacts/)"
  fi
done
for target in "${targets[@]}"; do
  echo "== $target"
  grep -E '^(#[0-9]+.*(DONE|pulse)|Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec)' \
    "work/$target.log" | tail -4
done
exit "$status"
