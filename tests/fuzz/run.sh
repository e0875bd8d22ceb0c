#!/usr/bin/env bash
# Fuzzes the Rust parsers: every cargo-fuzz target of tests/fuzz (fuzz_targets/*.rs), each for
# SECONDS_PER_TARGET (default 30), two at a time (one per core). Prints each target's executions
# and result; exits non-zero if any target crashed, with the crashing input saved under
# tests/fuzz/artifacts/<target>/ (gitignored) and the command that reproduces it.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET]        FUZZ_JOBS=1 for one target at a time
#
# libFuzzer starts from the committed seeds (corpus/<target>/) but writes the inputs it finds to a
# scratch directory, removed at the end, so the seeds stay small.
set -uo pipefail
FUZZ_DIR="$(cd "$(dirname "$0")" && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"
SECONDS_PER_TARGET="${1:-30}"
JOBS="${FUZZ_JOBS:-2}"
if ! [[ "$SECONDS_PER_TARGET" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [SECONDS_PER_TARGET]" >&2
  exit 2
fi

# cargo-fuzz builds with -Zsanitizer=address and other nightly-only flags. There is no nightly
# toolchain to download here; RUSTC_BOOTSTRAP=1 makes the stable one accept them.
export RUSTC_BOOTSTRAP=1
# Build and run with the same options (else `cargo fuzz run` rebuilds). 16 codegen units instead
# of cargo-fuzz's 1: the cold build (the fuzz stage of `make test` on a fresh clone) takes about a
# third less, for fuzzing a little slower.
BUILD_OPTS=(--fuzz-dir . --codegen-units 16)

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "==> installing cargo-fuzz (cargo install --locked cargo-fuzz)"
  cargo install --locked cargo-fuzz || exit 1
fi

cd "$FUZZ_DIR" || exit 1
mapfile -t TARGETS < <(cargo fuzz list --fuzz-dir .)
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

t0=$SECONDS
echo "==> building ${#TARGETS[@]} fuzz targets (${TARGETS[*]})"
if ! cargo fuzz build "${BUILD_OPTS[@]}" >"$SCRATCH/build.log" 2>&1; then
  grep -E '^error' -A12 "$SCRATCH/build.log" || tail -n 40 "$SCRATCH/build.log"
  echo "FAILED: cargo fuzz build" >&2
  exit 1
fi
echo "    built in $((SECONDS - t0)) s"

# fuzz TARGET: runs one target (cwd tests/fuzz: the config seeds name corpus/... files); its
# output goes to $SCRATCH/TARGET.log, its exit status to $SCRATCH/TARGET.rc.
fuzz() {
  local t="$1" dict=()
  mkdir -p "$SCRATCH/$t" "artifacts/$t"
  [ -f "dicts/$t.dict" ] && dict=("-dict=dicts/$t.dict")
  # -timeout: an input that runs 10 s is a hang, reported (and saved) like a crash.
  cargo fuzz run "${BUILD_OPTS[@]}" "$t" "$SCRATCH/$t" "corpus/$t" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -print_final_stats=1 "${dict[@]}" \
    >"$SCRATCH/$t.log" 2>&1
  echo $? >"$SCRATCH/$t.rc"
}

echo "==> fuzzing, $SECONDS_PER_TARGET s per target, $JOBS at a time"
running=0
for t in "${TARGETS[@]}"; do
  if [ "$running" -ge "$JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
  fuzz "$t" &
  running=$((running + 1))
done
wait

passed=0
failed=0
for t in "${TARGETS[@]}"; do
  log="$SCRATCH/$t.log"
  rc="$(cat "$SCRATCH/$t.rc" 2>/dev/null || echo 1)"
  execs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1)"
  # After a crash there are no final stats: the last progress line counts the executions.
  [ -n "$execs" ] || execs="$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')"
  corpus="$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -n 1)"
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    printf '  ok     %-8s %10s executions, %s\n' "$t" "${execs:-?}" "${corpus:-corp: ?}"
  else
    failed=$((failed + 1))
    printf '  FAIL   %-8s %10s executions (exit %s)\n' "$t" "${execs:-?}" "$rc"
    # The panic (or sanitizer report, timeout, out-of-memory), the input, how to reproduce it.
    grep -E "panicked at|^==[0-9]+==ERROR|ERROR: libFuzzer|SUMMARY" -A1 "$log" | head -n 12 | sed 's/^/      /'
    input="$(grep -oE 'Test unit written to [^ ]+' "$log" | tail -n 1 | sed 's/.* //; s|^\./||')"
    if [ -n "$input" ]; then
      echo "      input: tests/fuzz/$input"
      echo "      reproduce: (cd tests/fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run ${BUILD_OPTS[*]} $t $input)"
    else
      tail -n 20 "$log" | sed 's/^/      /'
    fi
  fi
done
echo "fuzz targets: $passed passed, $failed failed ($((SECONDS - t0)) s in all)"
[ "$failed" -eq 0 ]
