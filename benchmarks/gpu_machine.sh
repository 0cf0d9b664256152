#!/usr/bin/env bash
# On a GPU machine without a package index: the bundle of `make gpu-bundle` unpacked into a fresh folder and put
# on PYTHONPATH (after it, the image's own packages: its torch stays the one used), the imports checked, then the
# GPU tests, benchmarks/gpu.py, and the Reuters MLP of Tang et al. (2020) at a quarter of the GPU per trial for a
# time budget. Results and logs go to $OUT (at most 8 files, none in subfolders).
#
#   bash benchmarks/gpu_machine.sh [--dry-run] [--steps unpack,check,tests,bench,mlp] [--bundle DIR] [--out DIR]
#
# The call: command `bash benchmarks/gpu_machine.sh`, carry ["build/gpu-bundle"]. One call may run 600 s: split
# the steps over calls (unpack and check come first in each), e.g. `--steps tests,bench` then `--steps mlp`.
# --dry-run prints every step's commands and checks what a machine without a GPU can: the bundle's checksums and
# contents, the files the steps run, benchmarks/gpu.py's plan for its options (how long, how many trials finish;
# a budget it refuses fails the dry run), and the MLP's space (`showwork validate`).
#
# Budgets and options (environment):
#   BENCH_BUDGET_S  benchmarks/gpu.py --budget-s (default: none, its own plan for 16 trials per search)
#   BENCH_ARGS      more options for it, e.g. "--families mlp" or "--packings 0.25" to fit a call (default none)
#   MLP_BUDGET_S    the MLP search's seconds, then Ctrl-C (480)      MLP_CPUS    resources.cpus per MLP trial (4)
#   PYTHON          the interpreter (default python3, the image's)
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUNDLE="$REPO/build/gpu-bundle"
OUT="${OUT:-/tmp/showwork-gpu-out}"
STEPS="unpack,check,tests,bench,mlp"
DRY_RUN=0
PYTHON="${PYTHON:-python3}"
BENCH_BUDGET_S="${BENCH_BUDGET_S:-}"
BENCH_ARGS="${BENCH_ARGS:-}"
MLP_BUDGET_S="${MLP_BUDGET_S:-480}"
MLP_CPUS="${MLP_CPUS:-4}"
GPU_TESTS=(tests/integration/test_gpu_isolation.py tests/integration/test_gpu_trials.py)
FAILED=()

exec 3>&2  # the caller's stderr: errors go there (and to the log) after the output is sent through tee
fail() { echo "gpu_machine.sh: error: $*" >&3; [ -z "${LOG:-}" ] || echo "gpu_machine.sh: error: $*" >>"$LOG"; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) DRY_RUN=1 ;;
        --steps) [ $# -ge 2 ] || fail "--steps needs a list"; STEPS="$2"; shift ;;
        --bundle) [ $# -ge 2 ] || fail "--bundle needs a folder"; BUNDLE="$(cd "$2" 2>/dev/null && pwd)" || fail "--bundle: no folder $2"; shift ;;
        --out) [ $# -ge 2 ] || fail "--out needs a folder"; OUT="$2"; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) fail "unknown option $1 (see --help)" ;;
    esac
    shift
done
for step in ${STEPS//,/ }; do
    case "$step" in unpack|check|tests|bench|mlp) ;; *) fail "--steps: unknown step '$step' (unpack, check, tests, bench, mlp)" ;; esac
done
wants() { [[ ",$STEPS," == *",$1,"* ]]; }
# Every later step runs from the unpacked bundle.
if wants check || wants tests || wants bench || wants mlp; then STEPS="unpack,$STEPS"; fi
if wants tests || wants bench || wants mlp; then STEPS="check,$STEPS"; fi

mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)" || fail "cannot write to --out $OUT"
LOG_FILE="$OUT/gpu-machine.log"
exec > >(tee -a "$LOG_FILE") 2>&1
LOG="$LOG_FILE"
step() { echo; echo "== $1 ($(date -u +%H:%M:%S))"; }
show() { printf '+'; printf ' %q' "$@"; echo; }
run() { show "$@"; [ "$DRY_RUN" = 1 ] || "$@"; }
always() { show "$@"; "$@"; }  # run in a dry run too: it needs no GPU
# "$@" sent Ctrl-C after $1 seconds: GNU timeout sends SIGINT to the command and its process group (as a terminal
# would; the search stops and keeps its finished trials), then SIGKILL 90 s later if it is still running.
run_for() { local seconds="$1"; shift; run timeout --signal=INT --kill-after=90 "$seconds" "$@"; }

step "bundle: $BUNDLE"
[ -f "$BUNDLE/manifest.json" ] || fail "no bundle at $BUNDLE: run \`make gpu-bundle\` and carry build/gpu-bundle"
(cd "$BUNDLE" && sha256sum -c SHA256SUMS) || fail "the bundle's archives do not match its SHA256SUMS"
for file in "${GPU_TESTS[@]}" benchmarks/gpu.py benchmarks/gpu_bundle.py search_spaces/reuters_mlp.yaml; do
    [ -f "$REPO/$file" ] || fail "missing $file in the working tree"
done
cd "$REPO"

WORK=""
if wants unpack; then
    step "unpack into a fresh folder"
    WORK="$(mktemp -d /tmp/showwork-gpu.XXXXXX)"
    [ "$DRY_RUN" = 0 ] || trap 'rm -rf "$WORK"' EXIT
    always "$PYTHON" "$REPO/benchmarks/gpu_bundle.py" extract "$BUNDLE/site-packages.tar.xz" "$WORK/site" || fail "could not unpack the packages"
    always "$PYTHON" "$REPO/benchmarks/gpu_bundle.py" extract "$BUNDLE/data.tar.xz" "$WORK/data" || fail "could not unpack the data"
    always cp "$BUNDLE/manifest.json" "$WORK/manifest.json"
    # The bundle first, then the repository (showwork, showwork_models), then the image's own site-packages. A dry
    # run shows it and leaves the bundle off: its packages are for the GPU machine's Python 3.12.
    show export PYTHONPATH="$WORK/site:$REPO${PYTHONPATH:+:$PYTHONPATH}" SHOWWORK_DATA_DIR="$WORK/data"
    if [ "$DRY_RUN" = 1 ]; then
        export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
    else
        export PYTHONPATH="$WORK/site:$REPO${PYTHONPATH:+:$PYTHONPATH}"
    fi
    export SHOWWORK_DATA_DIR="$WORK/data" MLFLOW_DISABLE_TELEMETRY=true PYTHONUNBUFFERED=1
    # What the steps need is there, and the image's torch is not shadowed.
    "$PYTHON" - "$WORK" <<'EOF' || fail "the bundle lacks what the steps need"
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
manifest = json.loads((work / "manifest.json").read_text())
missing = [f"site/{name}" for name in ("ray", "mlflow", "pydantic") if not (work / "site" / name).is_dir()]
missing += [f"data/{d['path']}" for d in manifest["data"] if not (work / "data" / d["path"]).is_file()]
if missing or (work / "site" / "torch").exists():
    sys.exit(f"missing {', '.join(missing)}" if missing else "torch is carried: the image's must be used")
print(f"unpacked: {len(manifest['carried'])} carried packages, {len(manifest['data'])} data files")
EOF
fi

if wants check; then
    step "check: the carried packages' requirements, the imports, torch from the image, the GPU"
    run "$PYTHON" benchmarks/gpu_bundle.py check --manifest "$WORK/manifest.json" --site "$WORK/site" \
        || fail "the bundle does not fit this machine (see above)"
    [ "$DRY_RUN" = 1 ] || { nvidia-smi; "$PYTHON" -m pip list --format=freeze; } > "$OUT/env.txt" 2>&1
fi

if wants tests; then
    step "tests: ${GPU_TESTS[*]}"
    run "$PYTHON" -m pytest -m "slow or not slow" -q -rA -p no:cacheprovider --junitxml "$OUT/tests.xml" "${GPU_TESTS[@]}" \
        || FAILED+=(tests)
fi

if wants bench; then
    step "bench: benchmarks/gpu.py ${BENCH_BUDGET_S:+--budget-s $BENCH_BUDGET_S }$BENCH_ARGS"
    BENCH_OPTIONS=(--device cuda --json "$OUT/gpu.json" --markdown "$OUT/gpu.md" --workdir "$WORK/bench")
    [ -z "$BENCH_BUDGET_S" ] || BENCH_OPTIONS+=(--budget-s "$BENCH_BUDGET_S")
    # shellcheck disable=SC2206 # BENCH_ARGS is a list of options
    BENCH_OPTIONS+=($BENCH_ARGS)
    if [ "$DRY_RUN" = 1 ]; then
        # Its plan, or its refusal of these options, comes before it needs a GPU: with none visible it stops there.
        plan="$(CUDA_VISIBLE_DEVICES="" "$PYTHON" benchmarks/gpu.py "${BENCH_OPTIONS[@]}" 2>&1)"
        echo "$plan" | grep -v "torch sees no CUDA device"
        grep -q "torch sees no CUDA device" <<<"$plan" || fail "benchmarks/gpu.py refuses these options (above)"
        planned="$(sed -n 's/.*The plan: \([0-9]*\) s .*/\1/p' <<<"$plan")"
        [ -z "$planned" ] || [ "$planned" -le 500 ] || echo "gpu_machine.sh: warning: the benchmark plans $planned s, more than" \
            "a 600 s call leaves it: split it over calls with BENCH_ARGS (--families, --packings)"
    fi
    run "$PYTHON" benchmarks/gpu.py "${BENCH_OPTIONS[@]}" || FAILED+=(bench)
    # The ledgers, spaces and outputs; not the MLflow databases, Ray's files or the checkpoint's weights.
    [ "$DRY_RUN" = 1 ] || (cd "$WORK/bench" && find . -type f -size -2M ! -name '*.db' -print0 \
        | tar --null -T - -czf "$OUT/bench-ledgers.tgz")
fi

if wants mlp; then
    step "mlp: search_spaces/reuters_mlp.yaml at 1/4 GPU per trial, $MLP_BUDGET_S s"
    MLP_DIR="${WORK:-$(mktemp -d)}/mlp"
    mkdir -p "$MLP_DIR"
    # The paper's space and epochs as they are; only the packing changes: four trials at once on the one GPU.
    "$PYTHON" - search_spaces/reuters_mlp.yaml "$MLP_DIR/reuters_mlp_quarter.yaml" "$MLP_CPUS" <<'EOF' || fail "could not write the MLP's space"
import sys, yaml
source, target, cpus = sys.argv[1], sys.argv[2], float(sys.argv[3])
space = yaml.safe_load(open(source))
space.update(name="reuters-mlp-quarter-gpu", resources={"cpus": cpus, "gpus": 0.25}, max_concurrent=4)
open(target, "w").write(yaml.safe_dump(space, sort_keys=False))
EOF
    show "$PYTHON" -m showwork validate --no-family "$MLP_DIR/reuters_mlp_quarter.yaml"
    "$PYTHON" -m showwork validate --no-family "$MLP_DIR/reuters_mlp_quarter.yaml" || fail "the MLP's space does not validate"
    (cd "$MLP_DIR" && run_for "$MLP_BUDGET_S" "$PYTHON" -m showwork search reuters_mlp_quarter.yaml --no-progress \
        --storage runs --tracking-uri "sqlite:///$MLP_DIR/mlflow.db") || {
        status=$?  # 124: stopped at its budget, as planned; its finished trials are in the ledger
        if [ "$status" = 124 ]; then echo "(stopped at its budget of $MLP_BUDGET_S s)"; else FAILED+=(mlp); fi
    }
    [ "$DRY_RUN" = 1 ] || (cd "$MLP_DIR" && find . -type f -size -2M ! -name '*.db' -print0 \
        | tar --null -T - -czf "$OUT/mlp-ledger.tgz")
fi

step "done: ${FAILED[*]:-every step passed}; files in $OUT"
ls -la "$OUT"
[ ${#FAILED[@]} -eq 0 ]
