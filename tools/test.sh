#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite, as CI runs it: installs dependencies, builds, runs
# the unit tests under ASan/UBSan (ctest), then the end-to-end tests against
# a real Ceph RGW (pytest on Debian's python3). Ends with both runners'
# summary lines; exits non-zero if either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh || exit 1
bash tools/build.sh --asan || { echo "build failed"; exit 1; }

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j2
unit=$?

export LITH_BIN="$PWD/build/lith"
/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/e2e "$@"
e2e=$?
[ $e2e -eq 5 ] && e2e=1   # "no tests collected" is a failure here
[ $unit -eq 0 ] && [ $e2e -eq 0 ]
