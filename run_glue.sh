#!/usr/bin/env bash
# Fine-tunes, evaluates and predicts every GLUE task with the original run_glue.sh
# hyperparameters (warmup, learning rate, steps, checkpoint interval, batch per task).
#
#   ./run_glue.sh GLUE_DIR ALBERT_DIR OUTPUT_DIR
#
#   GLUE_DIR    the GLUE download: CoLA/ SST-2/ MRPC/ QQP/ STS-B/ MNLI/ QNLI/ RTE/ WNLI/ diagnostic/
#   ALBERT_DIR  a local model: albert_config.json, 30k-clean.model and a checkpoint
#               (model.ckpt-best.* of a release tarball, or a directory with a `checkpoint` file)
#   OUTPUT_DIR  one subdirectory per task (checkpoints, eval_results.txt, submit_results.tsv)
#
# The three paths may also come from the environment (GLUE_DIR, ALBERT_DIR, OUTPUT_DIR).
# Optional environment: INIT_CHECKPOINT (default ALBERT_DIR), ALBERT_CONFIG, SPM_MODEL,
# MAX_SEQ_LENGTH (default 512, as the original script), TASKS (e.g. "RTE MRPC"; default all),
# PYTHON (default .venv/bin/python if present, else python3), EXTRA_FLAGS (added to every call,
# e.g. "--precision=mixed_bfloat16"), DRY_RUN=1 (print the commands only).
#
# Differences from the original script: it never installs anything; it uses a local checkpoint
# and config instead of a TF-Hub handle; each task runs in ONE call with
# --do_train --do_eval --do_predict (every checkpoint is evaluated as soon as it is saved);
# WNLI (paper Table 14: 2e-5, batch 16, 2000 steps, 250 warmup) is added; after MNLI the
# best MNLI checkpoint also predicts MNLI-mismatched and the diagnostic set (ax).
set -euo pipefail

usage() {
  echo "usage: $0 GLUE_DIR ALBERT_DIR OUTPUT_DIR  (or set GLUE_DIR, ALBERT_DIR, OUTPUT_DIR)" >&2
  exit 2
}

GLUE_DIR="${1:-${GLUE_DIR:-}}"
ALBERT_DIR="${2:-${ALBERT_DIR:-}}"
OUTPUT_DIR="${3:-${OUTPUT_DIR:-}}"
[[ -n "$GLUE_DIR" && -n "$ALBERT_DIR" && -n "$OUTPUT_DIR" ]] || usage
[[ -d "$GLUE_DIR" ]] || { echo "GLUE_DIR=$GLUE_DIR: no such directory" >&2; exit 2; }
[[ -d "$ALBERT_DIR" ]] || { echo "ALBERT_DIR=$ALBERT_DIR: no such directory" >&2; exit 2; }
ALBERT_CONFIG="${ALBERT_CONFIG:-$ALBERT_DIR/albert_config.json}"
SPM_MODEL="${SPM_MODEL:-$ALBERT_DIR/30k-clean.model}"
INIT_CHECKPOINT="${INIT_CHECKPOINT:-$ALBERT_DIR}"
[[ -f "$ALBERT_CONFIG" ]] || { echo "ALBERT_CONFIG=$ALBERT_CONFIG: no such file" >&2; exit 2; }
[[ -f "$SPM_MODEL" ]] || { echo "SPM_MODEL=$SPM_MODEL: no such file" >&2; exit 2; }
MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-512}"
TASKS="${TASKS:-SST-2 MNLI CoLA QNLI QQP RTE STS-B MRPC WNLI}"

HERE="$(cd "$(dirname "$0")" && pwd)"
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x "$HERE/.venv/bin/python" ]]; then PYTHON="$HERE/.venv/bin/python"; else PYTHON=python3; fi
fi

run() {
  echo "+ $*"
  if [[ "${DRY_RUN:-0}" != 1 ]]; then "$@"; fi
}

COMMON=(--data_dir="$GLUE_DIR" --albert_config_file="$ALBERT_CONFIG" --spm_model_file="$SPM_MODEL"
        --do_lower_case --max_seq_length="$MAX_SEQ_LENGTH" --optimizer=adamw
        --cached_dir="$OUTPUT_DIR/cache")
read -r -a EXTRA <<< "${EXTRA_FLAGS:-}"
COMMON+=("${EXTRA[@]}")

# task warmup_step learning_rate train_step save_checkpoints_steps train_batch_size
run_task() {
  local task="$1" warmup="$2" lr="$3" steps="$4" save="$5" batch="$6"
  local lower
  lower="$(echo "$task" | tr '[:upper:]' '[:lower:]')"
  run "$PYTHON" "$HERE/run_classifier.py" --task_name="$lower" --output_dir="$OUTPUT_DIR/$task" \
    --init_checkpoint="$INIT_CHECKPOINT" --do_train --do_eval --do_predict \
    --warmup_step="$warmup" --learning_rate="$lr" --train_step="$steps" \
    --save_checkpoints_steps="$save" --train_batch_size="$batch" "${COMMON[@]}"
}

# Predictions of another task's test set with MNLI's best checkpoint (mismnli, ax).
predict_with_mnli() {
  local task="$1" name="$2"
  run mkdir -p "$OUTPUT_DIR/$name"
  run cp "$OUTPUT_DIR/MNLI/model.ckpt-best.index" "$OUTPUT_DIR/MNLI/model.ckpt-best.data-00000-of-00001" \
    "$OUTPUT_DIR/$name/"
  run "$PYTHON" "$HERE/run_classifier.py" --task_name="$task" --output_dir="$OUTPUT_DIR/$name" \
    --do_predict "${COMMON[@]}"
}

for task in $TASKS; do
  case "$task" in
    SST-2) run_task SST-2 1256 1e-5 20935 100 32 ;;
    MNLI)
      run_task MNLI 1000 3e-5 10000 100 128
      predict_with_mnli mismnli MNLI-MM
      predict_with_mnli ax AX ;;
    CoLA) run_task CoLA 320 1e-5 5336 100 16 ;;
    QNLI) run_task QNLI 1986 1e-5 33112 200 32 ;;
    QQP) run_task QQP 1000 5e-5 14000 100 128 ;;
    RTE) run_task RTE 200 3e-5 800 100 32 ;;
    STS-B) run_task STS-B 214 2e-5 3598 100 16 ;;
    MRPC) run_task MRPC 200 2e-5 800 100 32 ;;
    WNLI) run_task WNLI 250 2e-5 2000 100 16 ;;
    *) echo "unknown task '$task' in TASKS; valid: SST-2 MNLI CoLA QNLI QQP RTE STS-B MRPC WNLI" >&2
       exit 2 ;;
  esac
done
