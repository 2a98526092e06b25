#!/bin/bash
# What a benchmark's numbers were measured on, for the device sessions' device.txt: the time, the
# GPU (name, memory, driver, maximum clocks, power limit) and the checkout (commit, local changes).
date -u '+%Y-%m-%d %H:%M:%S UTC'
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem,power.limit \
  --format=csv 2>&1
git log -1 --format='commit %H %s' 2>/dev/null
git status --short -- src tests 2>/dev/null | head -20
