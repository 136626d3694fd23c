#!/usr/bin/python3
"""s3_bench — the S3 transport ceiling: `lith s3 bench` against `aws s3 cp`.

Starts the RGW bed (or reuses LITH_RGW_DIR), uploads one object (default
1 GiB), then in the same run and alternating, reads it whole with
  * lith s3 bench --concurrency 16 --part-size 8M   (parallel ranged GETs)
  * aws s3 cp s3://... /dev/shm/FILE                 (awscli 2, its defaults,
                                                      and with 16 concurrent requests;
                                                      a file in RAM, so its parallel
                                                      writes are not serialised)
directly against RGW and through the latency proxy's in-region profile
(~1 ms RTT, ~20 ms TTFB, 90 MB/s per connection). Prints MB/s (median of
--runs) and the ratio lith / aws. Not part of the test suite.

usage: /usr/bin/python3 tests/bench/s3_bench.py [--size-mib 1024] [--runs 3]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

import lithcli  # noqa: E402
from rgwbed import RgwBed  # noqa: E402
from s3proxy import S3Proxy  # noqa: E402

BUCKET, KEY = "lith-bench", "bench/object.bin"


def upload(bed, size):
    bed.make_bucket(BUCKET)
    chunk = os.urandom(64 << 20)
    data = (chunk * (size // len(chunk) + 1))[:size]
    bed.put_multipart(BUCKET, KEY, data, part_size=64 << 20)


def lith_once(bed, endpoint, conc):
    res = lithcli.s3(bed, "bench", f"s3://{BUCKET}/{KEY}", "--concurrency", str(conc),
                     "--part-size", "8M", endpoint=endpoint, check=True, timeout=900)
    fields = dict(f.split("=", 1) for f in res.text.split()[3:] if "=" in f)
    return float(fields["MB/s"])


def aws_once(bed, endpoint, size, conc, cfgdir):
    cfg = os.path.join(cfgdir, f"config-{conc or 'default'}")
    with open(cfg, "w") as f:
        f.write("[default]\nregion = us-east-1\n")
        if conc:
            f.write(f"s3 =\n  max_concurrent_requests = {conc}\n")
    env = lithcli.bed_env(bed, extra={"AWS_CONFIG_FILE": cfg})
    dest = os.path.join("/dev/shm", f"lith-bench-{os.getpid()}.bin")   # RAM: no disk
    t0 = time.monotonic()
    try:
        subprocess.run(["/usr/bin/aws", "s3", "cp", f"s3://{BUCKET}/{KEY}", dest,
                        "--endpoint-url", endpoint, "--no-progress", "--only-show-errors"],
                       env=env, check=True, timeout=900)
        return size / 1e6 / (time.monotonic() - t0)
    finally:
        if os.path.exists(dest):
            os.unlink(dest)


def measure(bed, endpoint, size, runs, cfgdir):
    got = {"lith c16": [], "aws default": [], "aws c16": []}
    for _ in range(runs):            # alternate so drift hits all alike
        got["lith c16"].append(lith_once(bed, endpoint, 16))
        got["aws default"].append(aws_once(bed, endpoint, size, None, cfgdir))
        got["aws c16"].append(aws_once(bed, endpoint, size, 16, cfgdir))
    return {k: statistics.median(v) for k, v in got.items()}


def report(profile, med):
    print(f"[{profile}]")
    for name, v in med.items():
        print(f"  {name:12s} {v:8.1f} MB/s")
    print(f"  ratio lith/aws(default) = {med['lith c16'] / med['aws default']:.2f}"
          f"   lith/aws(c16) = {med['lith c16'] / med['aws c16']:.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    size = args.size_mib << 20
    reuse = os.environ.get("LITH_RGW_DIR")
    bed = RgwBed.attach(reuse) if reuse else RgwBed(tempfile.mkdtemp(prefix="lith-bench-"))
    if not reuse:
        bed.start()
    try:
        upload(bed, size)
        with tempfile.TemporaryDirectory() as cfgdir:
            print(f"object: {size >> 20} MiB, runs: {args.runs} (median)")
            report("direct", measure(bed, bed.endpoint, size, args.runs, cfgdir))
            with S3Proxy(bed.port, profile="in-region") as px:
                report("in-region proxy", measure(bed, px.endpoint, size, args.runs,
                                                  cfgdir))
    finally:
        if not reuse:
            bed.stop()


if __name__ == "__main__":
    main()
