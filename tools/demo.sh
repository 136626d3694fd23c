#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# lith's main job, end to end on one machine: install what is missing,
# build, start a local S3 server (single-node Ceph RGW on loopback), load a
# small sample dataset, read every object back through lith, check each
# file's sha256 against the source, measure the transport ceiling, and tear
# the server down. Exits non-zero if any byte differs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh
PY=/usr/bin/python3
LITH="$PWD/build/lith"
work=$(mktemp -d /tmp/lith-demo.XXXXXX)
cleanup() {
  if [ -n "${csi_pid:-}" ]; then
    $PY tools/kubelet.py --csi "unix://$work/csi.sock" unpublish --volume-id demo-pv \
      --target "$target" >/dev/null 2>&1 || true
    kill "$csi_pid" 2>/dev/null && wait "$csi_pid" 2>/dev/null
  fi
  "$LITH" umount "$work/mnt" >/dev/null 2>&1 || true
  [ -n "${cached_pid:-}" ] && kill "$cached_pid" 2>/dev/null && wait "$cached_pid" 2>/dev/null
  $PY tests/e2e/rgwbed.py down --dir "$work/bed" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== starting a local S3 server (Ceph RGW, single node, loopback)"
$PY tests/e2e/rgwbed.py up --dir "$work/bed" >/dev/null
eval "$($PY tests/e2e/rgwbed.py env --dir "$work/bed")"
export AWS_ACCESS_KEY_ID=$LITH_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$LITH_S3_SECRET_KEY
export AWS_ENDPOINT_URL=$LITH_S3_ENDPOINT AWS_REGION=$LITH_S3_REGION

echo "== loading a sample dataset into s3://demo"
$PY tools/sample_dataset.py "$work/src"
aws() { /usr/bin/aws --endpoint-url "$LITH_S3_ENDPOINT" "$@"; }
aws s3 mb s3://demo >/dev/null
aws s3 cp --recursive --only-show-errors "$work/src" s3://demo/

echo "== lith s3 ls s3://demo --recursive"
"$LITH" s3 ls s3://demo --recursive

echo "== reading every object through lith and checking sha256"
fails=0
while IFS= read -r -d '' f; do
  key=${f#"$work/src/"}
  "$LITH" s3 get "s3://demo/$key" -o "$work/out"
  want=$(sha256sum < "$f" | cut -d' ' -f1); got=$(sha256sum < "$work/out" | cut -d' ' -f1)
  if [ "$want" = "$got" ]; then echo "ok   $got  $key"; else echo "FAIL $key"; fails=$((fails+1)); fi
done < <(find "$work/src" -type f -print0 | sort -z)

echo "== transport ceiling: lith s3 bench on the largest object"
"$LITH" s3 bench s3://demo/genomes/reads.bin --concurrency 16 --part-size 8M

echo "== the node cache daemon and a read-only mount of s3://demo"
"$LITH" cached --socket "$work/cached.sock" --cache-dir "$work/cache" --cache-size 1G \
  --probe-bytes 0 >"$work/cached.log" 2>&1 &
cached_pid=$!
for _ in $(seq 100); do "$LITH" cached stats --socket "$work/cached.sock" >/dev/null 2>&1 && break; sleep 0.1; done
mkdir -p "$work/mnt"
"$LITH" mount s3://demo "$work/mnt" --cache-socket "$work/cached.sock"
ls -lR "$work/mnt"
echo "== reading every file through the mount and checking sha256"
while IFS= read -r -d '' f; do
  rel=${f#"$work/src/"}
  want=$(sha256sum < "$f" | cut -d' ' -f1); got=$(sha256sum < "$work/mnt/$rel" | cut -d' ' -f1)
  if [ "$want" = "$got" ]; then echo "ok   $got  $rel"; else echo "FAIL $rel"; fails=$((fails+1)); fi
done < <(find "$work/src" -type f -print0 | sort -z)
"$LITH" umount "$work/mnt"

echo "== lith csi: a kubelet-style NodePublishVolume into a pod's target path"
target="$work/pods/demo-pod/volumes/kubernetes.io~csi/demo-pv/mount"
metrics_port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$LITH" csi --endpoint "unix://$work/csi.sock" --node-id demo-node --state-dir "$work/csi-state" \
  --cache-socket "$work/cached.sock" --metrics-addr "127.0.0.1:$metrics_port" >"$work/csi.log" 2>&1 &
csi_pid=$!
kubelet() { $PY tools/kubelet.py --csi "unix://$work/csi.sock" "$@"; }
kubelet info
mkdir -p "$(dirname "$target")"
kubelet publish --volume-id demo-pv --target "$target" --bucket demo --endpoint "$LITH_S3_ENDPOINT"
ls -lR "$target"
echo "== reading every file through the published target and checking sha256"
while IFS= read -r -d '' f; do
  rel=${f#"$work/src/"}
  want=$(sha256sum < "$f" | cut -d' ' -f1); got=$(sha256sum < "$target/$rel" | cut -d' ' -f1)
  if [ "$want" = "$got" ]; then echo "ok   $got  $rel"; else echo "FAIL $rel"; fails=$((fails+1)); fi
done < <(find "$work/src" -type f -print0 | sort -z)
kubelet stats --volume-id demo-pv --target "$target"
echo "== one Prometheus scrape of the node (http://127.0.0.1:$metrics_port/metrics), a few series"
curl -sf "http://127.0.0.1:$metrics_port/metrics" | grep -E \
  '^lith_(fill_seconds_count|ttfb_floor_seconds|s3_requests_total|fuse_read_bytes_total|cache_used_bytes|cached_up)' || true
kubelet unpublish --volume-id demo-pv --target "$target"

[ "$fails" -eq 0 ] && echo "demo: all objects byte-identical" || { echo "demo: $fails objects differ"; exit 1; }
