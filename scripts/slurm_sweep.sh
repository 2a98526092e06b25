#!/usr/bin/env bash
# A Slurm job array for a long experiment: task I of N runs shard I/N (sequences
# [I*K/N, (I+1)*K/N)), resumable after preemption; merge the shards when all tasks are done.
#
#   sbatch --array=0-7 scripts/slurm_sweep.sh experiments/paper_kl_vs_length.ini results/kl
#   # when every task has finished:
#   build/replayssm merge results/kl.h5 results/kl.shard-*-of-8.h5
#   build/replayssm summary results/kl.h5
#
# Every task checkpoints to OUT.ckpt and restarts with --resume, so `--requeue` and preemption
# cost at most checkpoint_every steps. Shards are independent: results do not depend on N.
#SBATCH --job-name=replayssm
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=24:00:00
#SBATCH --requeue
#SBATCH --output=slurm-%A_%a.out
set -euo pipefail

EXPERIMENT=${1:?usage: sbatch --array=0-(N-1) scripts/slurm_sweep.sh EXPERIMENT.ini OUT_PREFIX}
PREFIX=${2:?usage: sbatch --array=0-(N-1) scripts/slurm_sweep.sh EXPERIMENT.ini OUT_PREFIX}
BIN=${BIN:-build/replayssm}
I=${SLURM_ARRAY_TASK_ID:?run this as a job array (sbatch --array=0-N)}
N=${SLURM_ARRAY_TASK_COUNT:?run this as a job array (sbatch --array=0-N)}
DEVICE=${DEVICE:-cpu}

mkdir -p "$(dirname "$PREFIX")"
OUT="$PREFIX.shard-$I-of-$N.h5"
# --resume: continue from OUT.ckpt after a requeue; a finished shard exits at once
"$BIN" run "$EXPERIMENT" --shard "$I/$N" --out "$OUT" --resume \
  --threads "${SLURM_CPUS_PER_TASK:-2}" --device "$DEVICE"
