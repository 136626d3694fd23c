#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs everything lith needs to build, run and test on a fresh Debian 12
# machine (run as root). Idempotent: when every package is already present it
# only runs dpkg-query and exits in well under a second.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config git curl
  libcurl4-openssl-dev libssl-dev libexpat1-dev libyaml-dev libxxhash-dev
  libfuse3-dev fuse3 libgrpc-dev libprotobuf-c-dev protobuf-c-compiler
  protobuf-compiler libmicrohttpd-dev
  ceph-mon ceph-osd radosgw ceph-common
  python3 python3-pytest python3-boto3 python3-grpcio python3-grpc-tools
  python3-yaml awscli iproute2 psmisc procps util-linux
  s3fs rclone prometheus python3-matplotlib
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
