"""End-to-end tests of `lith cached`, the node cache daemon, on Ceph RGW:
single flight and coalescing (GET counts from the server's ledger), the
disk cap under a workload four times the cache, warm reads after a restart,
corrupted blocks refetched, tenancy between credentials, and hostile
clients on the socket."""

import hashlib
import os
import socket
import struct
import tempfile
import subprocess
import threading
import time

import pytest

import lithcli
from cachedd import Cached

MIB = 1 << 20


def sha(b):
    return hashlib.sha256(b).hexdigest()


@pytest.fixture
def cached(tmp_path):
    started = []

    def make(**kw):
        d = Cached(tmp_path / f"cached{len(started)}", **kw)
        started.append(d)
        return d.start()
    yield make
    for d in started:
        d.stop()


def test_eight_clients_one_fetch_per_block(rgw, bucket, cached, tmp_path):
    data = os.urandom(64 * MIB)
    rgw.put_multipart(bucket, "shared/cold.bin", data, part_size=16 * MIB)
    d = cached()
    env = lithcli.bed_env(rgw)
    with rgw.ledger.window() as w:
        procs = [subprocess.Popen([lithcli.lith_bin(), *d.cat_args(
            rgw, bucket, "shared/cold.bin", out=tmp_path / f"out{i}")], env=env,
            stderr=subprocess.PIPE) for i in range(8)]
        errs = [p.communicate(timeout=300)[1] for p in procs]
    for i, p in enumerate(procs):
        assert p.returncode == 0, errs[i]
        assert sha((tmp_path / f"out{i}").read_bytes()) == sha(data)
    # 64 MiB in 1 MiB blocks, coalesced 8 to a GET: exactly 8 GETs node-wide,
    # however the eight readers interleave.
    gets = w.counts.of("GET")
    assert len(gets) == 8, [(e.path, e.status) for e in gets]
    assert all(e.status == 206 for e in gets)
    assert d.stats()["s3_get"] == 8


def disk_bytes(path):
    """Allocated and apparent bytes of everything under path."""
    alloc = apparent = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                st = os.stat(os.path.join(root, f))
            except FileNotFoundError:
                continue
            alloc += st.st_blocks * 512
            apparent += st.st_size
    return alloc, apparent


def test_exact_reads_fetch_just_their_bytes_uncached(rgw, bucket, cached, tmp_path):
    data = os.urandom(3 * MIB + 1234)
    rgw.put(bucket, "exact.bin", data)
    d = cached()
    env = lithcli.bed_env(rgw)
    out = tmp_path / "out"
    with rgw.ledger.window() as w:
        res = lithcli.run([*d.cat_args(rgw, bucket, "exact.bin", out=out, chunk="64K"),
                           "--exact", "--kind", "demand"], env=env, timeout=120)
    assert res.rc == 0, res.text
    assert out.read_bytes() == data
    gets = w.counts.of("GET")
    # one ranged GET per 64 KiB chunk, nothing more: no block was filled
    assert len(gets) == (len(data) + 65535) // 65536
    assert sum(e.bytes for e in gets) == len(data)
    assert all(e.status == 206 for e in gets)
    assert d.stats()["used_bytes"] == 0
    # once the blocks are cached, exact reads are answered from them
    assert d.cat(rgw, bucket, "exact.bin", env=env).rc == 0
    with rgw.ledger.window() as w:
        res = lithcli.run([*d.cat_args(rgw, bucket, "exact.bin", out=out, chunk="64K"),
                           "--exact"], env=env, timeout=120)
    assert res.rc == 0 and out.read_bytes() == data
    assert w.counts["GET"] == 0


def test_cap_holds_under_four_times_the_cache(rgw, bucket, cached, tmp_path):
    cap = 64 * MIB
    objs = {f"big/{i}.bin": os.urandom(16 * MIB) for i in range(16)}   # 256 MiB
    for k, v in objs.items():
        rgw.put(bucket, k, v)
    d = cached(cache_size=str(cap))
    peak = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], *disk_bytes(d.cache_dir))
            time.sleep(0.02)
    t = threading.Thread(target=watch)
    t.start()
    try:
        for rnd in range(2):
            for k, v in objs.items():
                res = d.cat(rgw, bucket, k, out=tmp_path / "o")
                assert res.rc == 0, res.err
                assert sha((tmp_path / "o").read_bytes()) == sha(v), k
    finally:
        stop.set()
        t.join()
    assert 0 < peak[0] <= cap, f"peak {peak[0]} bytes on disk, cap {cap}"
    assert d.stats()["evictions"] > 0


def test_restart_keeps_the_cache(rgw, bucket, cached, tmp_path):
    data = os.urandom(20 * MIB + 12345)
    rgw.put(bucket, "warm/file.bin", data)
    d = cached()
    assert d.cat(rgw, bucket, "warm/file.bin", out=tmp_path / "a").rc == 0
    assert d.stop() == 0
    d.start()
    with rgw.ledger.window() as w:
        res = d.cat(rgw, bucket, "warm/file.bin", out=tmp_path / "b")
    assert res.rc == 0, res.err
    assert sha((tmp_path / "b").read_bytes()) == sha(data)
    assert w.counts["GET"] == 0, w.counts.entries
    assert w.counts["HEAD"] == 0, w.counts.entries
    # only the view registration's own LIST check, nothing to read data
    assert w.counts.total == w.counts["LIST"] == 1


def test_corrupted_block_is_refetched(rgw, bucket, cached, tmp_path):
    data = os.urandom(8 * MIB)
    rgw.put(bucket, "c/file.bin", data)
    d = cached()
    assert d.cat(rgw, bucket, "c/file.bin", out=tmp_path / "a").rc == 0
    blocks = os.path.join(d.cache_dir, "blocks", "blocks.data")
    with open(blocks, "r+b") as f:            # scribble over every cached slot
        f.write(os.urandom(16 * MIB))
        f.flush()
        os.fsync(f.fileno())
    with rgw.ledger.window() as w:
        res = d.cat(rgw, bucket, "c/file.bin", out=tmp_path / "b")
    assert res.rc == 0, res.err
    assert sha((tmp_path / "b").read_bytes()) == sha(data)
    assert w.counts["GET"] >= 1               # refetched, never served bad bytes


def test_tenancy_second_identity_gets_no_bytes(rgw, bucket, cached, tmp_path):
    """user2 may list the bucket (bucket ACL) but not read its objects: the
    blocks user1 cached are never served to user2."""
    data = os.urandom(3 * MIB)
    rgw.put(bucket, "secret/data.bin", data)
    rgw.client().put_bucket_acl(
        Bucket=bucket, GrantRead="id=lith-user2",
        GrantFullControl="id=lith-user1")
    d = cached()
    assert d.cat(rgw, bucket, "secret/data.bin", out=tmp_path / "mine").rc == 0
    env2 = lithcli.bed_env(rgw, rgw.user2_access_key, rgw.user2_secret_key)
    out = tmp_path / "theirs"
    with rgw.ledger.window() as w:
        res = d.cat(rgw, bucket, "secret/data.bin", env=env2, out=out)
    assert res.rc == 1
    assert "Permission denied" in res.err
    assert not out.exists()
    assert all(e.status >= 400 for e in w.counts.entries if e.kind in ("GET", "HEAD"))
    assert len(w.counts.of("HEAD", 403)) == 1


def test_unlisted_bucket_refuses_registration(rgw, bucket, cached):
    rgw.put(bucket, "x", b"x")
    d = cached()
    env2 = lithcli.bed_env(rgw, rgw.user2_access_key, rgw.user2_secret_key)
    res = d.cat(rgw, bucket, "x", env=env2)
    assert res.rc == 1 and "403" in res.err and "Permission denied" in res.err
    res = d.cat(rgw, "lith-no-such-bucket-x", "x")
    assert res.rc == 1 and "NoSuchBucket" in res.err
    res = d.cat(rgw, bucket, "x", env=lithcli.bed_env(rgw, secret_key="wrong"))
    assert res.rc == 1 and "SignatureDoesNotMatch" in res.err


def raw_conn(d):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(d.socket)
    s.settimeout(10)
    return s


def closed_by_peer(s):
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def test_hostile_frames_close_only_that_connection(rgw, bucket, cached, tmp_path):
    rgw.put(bucket, "ok.txt", b"still served")
    d = cached()
    bystander = raw_conn(d)                                # idle, must survive
    for frame in (struct.pack("<I", 0xFFFFFFFF),           # absurd length
                  struct.pack("<I", 5) + b"\xff\xff\xff\xff\xff",  # not protobuf
                  struct.pack("<I", 3) + b"\x08\x01\x1a"):  # Read before Hello
        s = raw_conn(d)
        s.sendall(frame)
        assert closed_by_peer(s), frame
        s.close()
    s = raw_conn(d)                                        # truncated, then gone
    s.sendall(struct.pack("<I", 100) + b"abc")
    s.close()
    res = d.cat(rgw, bucket, "ok.txt")
    assert res.rc == 0 and res.out == b"still served"
    bystander.setblocking(False)
    with pytest.raises(BlockingIOError):                   # still open, no data
        bystander.recv(1)
    bystander.close()


def test_only_root_may_connect(cached):
    sockdir = tempfile.mkdtemp(prefix="lith-sock-")   # reachable by uid 65534
    os.chmod(sockdir, 0o755)
    d = cached(socket=os.path.join(sockdir, "cached.sock"))
    os.chmod(d.socket, 0o666)
    res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          lithcli.lith_bin(), "cached", "stats", "--socket", d.socket],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1
    assert "refused cache client" in d.log()
    assert "uid=65534" in d.log()
    assert d.stats_text() is not None                     # root still may


def test_config_is_validated(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("cache_size: 1G\ncache_sise: 2G\n")
    res = lithcli.run(["cached", "--config", str(cfg), "--socket", str(tmp_path / "s"),
                       "--cache-dir", str(tmp_path / "d")])
    assert res.rc == 2 and "unknown setting 'cache_sise'" in res.err
    res = lithcli.run(["cached", "--cache-size", "lots", "--socket", str(tmp_path / "s")])
    assert res.rc == 2 and "cache-size" in res.err and "lots" in res.err
    cfg.write_text("block_size: 3M\n")
    res = lithcli.run(["cached", "--config", str(cfg), "--socket", str(tmp_path / "s"),
                       "--cache-dir", str(tmp_path / "d")])
    assert res.rc == 2 and "power of two" in res.err
