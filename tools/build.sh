#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds lith: build/ (release, what the demo and e2e tests run) and, with
# --asan, build-asan/ with every target (ASan+UBSan, what the unit tests run
# under in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs" --target lith >/dev/null
if [ "${1:-}" = "--asan" ]; then
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DLITH_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$jobs" >/dev/null
fi
