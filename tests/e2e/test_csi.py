"""End-to-end tests of `lith csi`: a Python gRPC client (stubs generated at
test time from proto/csi.proto) plays kubelet and node-driver-registrar
against a real `lith cached`, real FUSE mounts and RGW.

Owns: the csi fixture (lith cached + lith csi in a temp dir, stopped and
every published target cleaned after the test) and the request builders.
The supervision/state tests at the end SIGKILL mounters mid-read, restart
lith csi mid-read and inspect the state dir; the ones that need
`lith mount --takeover --init-file` skip, naming the flags, when the
build's mounter lacks them.
"""

import glob
import hashlib
import importlib
import os
import signal
import stat
import subprocess
import sys
import threading
import time

import grpc
import pytest

import lithcli
from cachedd import Cached
from lithmount import mounted, pids_with, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("csistubs"))
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.join(ROOT, "proto"),
                    f"--python_out={out}", f"--grpc_python_out={out}",
                    os.path.join(ROOT, "proto", "csi.proto")], check=True)
    sys.path.insert(0, out)
    return importlib.import_module("csi_pb2"), importlib.import_module("csi_pb2_grpc")


class Csi:
    def __init__(self, workdir, cached, pb, extra=()):
        self.workdir, self.cached, (self.pb, self.rpc) = str(workdir), cached, pb
        self.extra = list(extra)
        self.sock = os.path.join(self.workdir, "csi.sock")
        self.state = os.path.join(self.workdir, "state")
        self.log_path = os.path.join(self.workdir, "csi.log")
        self.proc = None

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [lithcli.lith_bin(), "csi", "--endpoint", "unix://" + self.sock, "--node-id",
             "node-1", "--state-dir", self.state, "--cache-socket", self.cached.socket,
             *self.extra],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        self.chan = grpc.insecure_channel("unix://" + self.sock)
        grpc.channel_ready_future(self.chan).result(timeout=20)
        self.ident = self.rpc.IdentityStub(self.chan)
        self.node = self.rpc.NodeStub(self.chan)
        return self

    def stop(self):
        self.chan.close()
        self.proc.terminate()
        self.proc.wait(20)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


@pytest.fixture
def csi(rgw, tmp_path, pb):
    cached = Cached(tmp_path / "cached").start()
    c = Csi(tmp_path, cached, pb).start()
    c.targets = []
    yield c
    for t in c.targets:
        try:
            c.node.NodeUnpublishVolume(pb[0].NodeUnpublishVolumeRequest(volume_id="x", target_path=t),
                                       timeout=60)
        except grpc.RpcError:
            pass
    c.stop()
    cached.stop()
    assert not pids_with(str(tmp_path)), "a mounter outlived the test"


def publish_req(csi, rgw, bucket, target, vol="vol-1", ctx=None, secrets=None, mode=None,
                readonly=True, block=False, flags=("allow_other", "ro")):
    pb = csi.pb
    cap = pb.VolumeCapability(access_mode=pb.VolumeCapability.AccessMode(
        mode=mode or pb.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY))
    if block:
        cap.block.SetInParent()
    else:
        cap.mount.fs_type = "fuse"
        cap.mount.mount_flags.extend(flags)
    vc = {"bucket": bucket, "endpoint": rgw.endpoint, "pathStyle": "true",
          "csi.storage.k8s.io/pod.name": "job-7x2", "csi.storage.k8s.io/pod.namespace": "ns",
          "csi.storage.k8s.io/pod.uid": "u-1", "csi.storage.k8s.io/serviceAccount.name": "default",
          "csi.storage.k8s.io/ephemeral": "false"}
    vc.update(ctx or {})
    vc = {k: v for k, v in vc.items() if v is not None}
    sec = secrets if secrets is not None else {"accessKeyID": rgw.env()["LITH_S3_ACCESS_KEY"],
                                               "secretAccessKey": rgw.env()["LITH_S3_SECRET_KEY"]}
    if target not in csi.targets:
        csi.targets.append(target)
    return pb.NodePublishVolumeRequest(volume_id=vol, target_path=target, volume_capability=cap,
                                       readonly=readonly, secrets=sec, volume_context=vc)


def pod_target(tmp_path, pod):
    d = tmp_path / "pods" / pod / "volumes" / "kubernetes.io~csi" / "pv"
    d.mkdir(parents=True, exist_ok=True)
    return str(d / "mount")


def fill(rgw, bucket):
    data = {"a.txt": b"hello lith\n", "dir/b.bin": os.urandom(3 << 20), "dir/c/d": b"x" * 5000}
    for k, v in data.items():
        rgw.put(bucket, k, v)
    return data


def test_kubelet_flow(csi, rgw, bucket, tmp_path):
    pb = csi.pb
    data = fill(rgw, bucket)
    info = csi.ident.GetPluginInfo(pb.GetPluginInfoRequest())
    assert info.name == "lith.csi" and info.vendor_version and "commit" in info.manifest
    assert csi.ident.Probe(pb.ProbeRequest()).ready.value is True
    ni = csi.node.NodeGetInfo(pb.NodeGetInfoRequest())
    assert ni.node_id == "node-1"
    caps = {c.rpc.type for c in csi.node.NodeGetCapabilities(pb.NodeGetCapabilitiesRequest()).capabilities}
    R = pb.NodeServiceCapability.RPC
    assert caps == {R.GET_VOLUME_STATS, R.VOLUME_CONDITION, R.VOLUME_MOUNT_GROUP}
    target = pod_target(tmp_path, "pod1")
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target), timeout=120)
    assert mounted(target)
    for k, v in data.items():
        with open(os.path.join(target, k), "rb") as f:
            assert f.read() == v
    st = csi.node.NodeGetVolumeStats(pb.NodeGetVolumeStatsRequest(volume_id="vol-1", volume_path=target))
    by = {u.unit: u for u in st.usage}
    assert by[pb.VolumeUsage.BYTES].used >= sum(len(v) for v in data.values())
    assert by[pb.VolumeUsage.INODES].used >= 3
    assert not st.volume_condition.abnormal
    # idempotent: the same request again is OK; other arguments → ALREADY_EXISTS
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target), timeout=60)
    with pytest.raises(grpc.RpcError) as e:
        csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target, ctx={"prefix": "dir/"}))
    assert e.value.code() == grpc.StatusCode.ALREADY_EXISTS
    secret = rgw.env()["LITH_S3_SECRET_KEY"]
    assert secret not in csi.log()
    for pid in pids_with(target):
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert secret.encode() not in f.read()
    csi.node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(volume_id="vol-1", target_path=target))
    assert not mounted(target) and not os.path.exists(target)
    assert not pids_with(target)
    # idempotent unpublish
    csi.node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(volume_id="vol-1", target_path=target))


def test_second_pod_reads_from_cache(csi, rgw, bucket, tmp_path):
    data = fill(rgw, bucket)
    t1, t2 = pod_target(tmp_path, "pod1"), pod_target(tmp_path, "pod2")
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, t1), timeout=120)
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, t2), timeout=120)
    for k, v in data.items():
        with open(os.path.join(t1, k), "rb") as f:
            assert f.read() == v
    mark = rgw.ledger.mark()
    for k, v in data.items():
        with open(os.path.join(t2, k), "rb") as f:
            assert f.read() == v
    assert rgw.ledger.since(mark).of("GET") == []


BAD = [
    ("no volume id", dict(vol=""), "INVALID_ARGUMENT", "volume_id is required"),
    ("relative target", dict(target="rel/mount"), "INVALID_ARGUMENT", "absolute"),
    ("dotdot target", dict(target="/tmp/../etc/mount"), "INVALID_ARGUMENT", "normalised"),
    ("block access", dict(block=True), "INVALID_ARGUMENT", "not block"),
    ("writer mode", dict(mode=1, readonly=False), "INVALID_ARGUMENT", "ReadOnlyMany"),
    ("no bucket", dict(ctx={"bucket": None}), "INVALID_ARGUMENT", "bucket is required"),
    ("typo key", dict(ctx={"prefx": "a/"}), "INVALID_ARGUMENT", "unknown volume attributes: prefx"),
    ("bad bool", dict(ctx={"pathStyle": "yes"}), "INVALID_ARGUMENT", "pathStyle"),
    ("bad flag", dict(flags=("rw",)), "INVALID_ARGUMENT", "mount option 'rw'"),
    ("bad secret key", dict(secrets={"password": "x"}), "INVALID_ARGUMENT", "unknown secret key"),
    ("missing bucket", dict(ctx={"bucket": "lith-no-such-bucket"}), "NOT_FOUND", "does not exist"),
    ("wrong secret", dict(secrets={"accessKeyID": "AK", "secretAccessKey": "nope"}),
     "PERMISSION_DENIED", "403"),
    ("unreachable", dict(ctx={"endpoint": "http://127.0.0.1:1"}), "UNAVAILABLE", "127.0.0.1"),
]


@pytest.mark.parametrize("name,kw,code,frag", BAD, ids=[b[0] for b in BAD])
def test_bad_publish(csi, rgw, bucket, tmp_path, name, kw, code, frag):
    target = kw.pop("target", None) or pod_target(tmp_path, "bad")
    with pytest.raises(grpc.RpcError) as e:
        csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target, **kw), timeout=120)
    assert e.value.code().name == code, e.value.details()
    assert frag in e.value.details()
    if target.startswith("/"):
        assert not mounted(target) and not os.path.exists(target)
    assert not pids_with(target)


def test_unknown_method_and_stage(csi):
    pb = csi.pb
    with pytest.raises(grpc.RpcError) as e:
        csi.node.NodeStageVolume(pb.NodeStageVolumeRequest(volume_id="v"))
    assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as e:
        csi.node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(volume_id="v", target_path="x"))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# ---- supervision and durable state ----

def mount_flags():
    """The restart flags this build's `lith mount` understands."""
    out = subprocess.run([lithcli.lith_bin(), "mount", "--help"], capture_output=True,
                         text=True).stdout + ""
    return {f for f in ("--takeover", "--init-file", "--status-fd", "--no-private-cache")
            if f in out}


def needs_takeover():
    missing = {"--takeover", "--init-file"} - mount_flags()
    return pytest.mark.skipif(bool(missing), reason="lith mount lacks " + ", ".join(sorted(missing)) +
                              " (restarting a mounter on a live connection needs it)")


class Reader(threading.Thread):
    """Streams a file through the mount (1 MiB reads, throttled), hashing it."""

    def __init__(self, path, pause=0.0, hold=None):
        super().__init__(daemon=True)
        self.path, self.pause, self.hold = path, pause, hold
        self.done_bytes, self.digest, self.error = 0, None, None

    def run(self):
        h = hashlib.sha256()
        try:
            with open(self.path, "rb") as f:
                while True:
                    if self.hold is not None:
                        self.hold.wait()
                    b = f.read(1 << 20)
                    if not b:
                        break
                    h.update(b)
                    self.done_bytes += len(b)
                    time.sleep(self.pause)
            self.digest = h.hexdigest()
        except OSError as e:
            self.error = e


def big_object(rgw, bucket, size=200 << 20):
    data = os.urandom(size)
    rgw.put(bucket, "big.bin", data)
    return hashlib.sha256(data).hexdigest()


def state_files(csi):
    return sorted(glob.glob(os.path.join(csi.state, "pub-*.state")))


def stats(csi, target, vol="vol-1"):
    return csi.node.NodeGetVolumeStats(csi.pb.NodeGetVolumeStatsRequest(volume_id=vol,
                                                                        volume_path=target))


@needs_takeover()
def test_sigkill_mounter_mid_read(csi, rgw, bucket, tmp_path):
    want = big_object(rgw, bucket)
    target = pod_target(tmp_path, "pod1")
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target), timeout=120)
    old = pids_with(target)
    assert len(old) == 1
    r = Reader(os.path.join(target, "big.bin"), pause=0.01)
    r.start()
    assert wait_for(lambda: r.done_bytes >= 32 << 20, timeout=60)
    os.kill(old[0], signal.SIGKILL)
    r.join(180)
    assert not r.is_alive(), "the reader hung after the mounter was killed"
    assert r.error is None, r.error
    assert r.done_bytes == 200 << 20 and r.digest == want
    new = pids_with(target)
    assert len(new) == 1 and new != old
    assert wait_for(lambda: not stats(csi, target).volume_condition.abnormal, timeout=30)
    assert "mounter restarted" in csi.log()
    with open(state_files(csi)[0]) as f:
        assert f"pid\t{new[0]}\n" in f.read()


def test_dead_mounter_condition(csi, rgw, bucket, tmp_path):
    """Without --takeover the volume turns abnormal at once and readers get
    ENOTCONN instead of hanging; with it, the mounter is restarted a bounded
    number of times in a row, then given up."""
    fill(rgw, bucket)
    target = pod_target(tmp_path, "pod1")
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target), timeout=120)
    takeover = {"--takeover", "--init-file"} <= mount_flags()
    for _ in range(6 if takeover else 1):
        assert wait_for(lambda: len(pids_with(target)) == 1, timeout=60)
        os.kill(pids_with(target)[0], signal.SIGKILL)
        wait_for(lambda: not pids_with(target), timeout=10)
        time.sleep(0.3)
    assert wait_for(lambda: "will not be restarted" in stats(csi, target).volume_condition.message,
                    timeout=60)
    cond = stats(csi, target).volume_condition
    assert cond.abnormal
    assert ("restarts in a row" if takeover else "--takeover") in cond.message
    with pytest.raises(OSError):
        os.listdir(target)
    csi.node.NodeUnpublishVolume(csi.pb.NodeUnpublishVolumeRequest(volume_id="vol-1",
                                                                   target_path=target))
    assert not mounted(target) and not os.path.exists(target) and not state_files(csi)


def test_state_file_private_no_secret(csi, rgw, bucket, tmp_path):
    fill(rgw, bucket)
    target = pod_target(tmp_path, "pod1")
    sec = {"accessKeyID": rgw.env()["LITH_S3_ACCESS_KEY"],
           "secretAccessKey": rgw.env()["LITH_S3_SECRET_KEY"], "sessionToken": "tok-not-on-disk"}
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target, secrets=sec), timeout=120)
    assert stat.S_IMODE(os.stat(csi.state).st_mode) == 0o700
    files = state_files(csi)
    assert len(files) == 1
    for path in glob.glob(os.path.join(csi.state, "*")):
        st = os.stat(path)
        assert stat.S_IMODE(st.st_mode) & 0o077 == 0, path
        with open(path, "rb") as f:
            blob = f.read()
        for v in sec.values():
            assert v.encode() not in blob, f"a secret is in {path}"
    with open(files[0]) as f:
        text = f.read()
    assert f"target\t{target}\n" in text and "volume_id\tvol-1\n" in text
    csi.node.NodeUnpublishVolume(csi.pb.NodeUnpublishVolumeRequest(volume_id="vol-1",
                                                                   target_path=target))
    assert not state_files(csi)


def test_failed_publish_leaves_no_state(csi, rgw, bucket, tmp_path):
    target = pod_target(tmp_path, "bad")
    with pytest.raises(grpc.RpcError):
        csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target,
                                               ctx={"bucket": "lith-no-such-bucket"}), timeout=120)
    assert not os.listdir(csi.state) or not glob.glob(os.path.join(csi.state, "pub-*"))


def test_restart_csi_mid_read(csi, rgw, bucket, tmp_path):
    want = big_object(rgw, bucket, 64 << 20)
    target = pod_target(tmp_path, "pod1")
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target), timeout=120)
    pid = pids_with(target)
    hold = threading.Event()
    hold.set()
    r = Reader(os.path.join(target, "big.bin"), hold=hold)
    r.start()
    assert wait_for(lambda: r.done_bytes >= 8 << 20, timeout=60)
    hold.clear()  # the file stays open across the restart
    csi.stop()
    assert pids_with(target) == pid and mounted(target)
    csi.start()
    hold.set()
    r.join(120)
    assert r.error is None and r.digest == want
    assert "re-adopted mounter" in csi.log()
    st = stats(csi, target)
    assert not st.volume_condition.abnormal and st.usage
    # idempotency across the restart
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target), timeout=60)
    with pytest.raises(grpc.RpcError) as e:
        csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target, ctx={"prefix": "dir/"}))
    assert e.value.code() == grpc.StatusCode.ALREADY_EXISTS
    with pytest.raises(grpc.RpcError) as e:
        csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target, secrets={
            "accessKeyID": rgw.env()["LITH_S3_ACCESS_KEY"], "secretAccessKey": "other"}))
    assert e.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert pids_with(target) == pid
    csi.node.NodeUnpublishVolume(csi.pb.NodeUnpublishVolumeRequest(volume_id="vol-1",
                                                                   target_path=target))
    assert not mounted(target) and not os.path.exists(target)
    assert wait_for(lambda: not pids_with(target), timeout=15)
    assert not state_files(csi)


def test_restart_csi_cleans_stale(csi, rgw, bucket, tmp_path):
    """A record whose target was unmounted while lith csi was down is dropped
    (its mounter stopped); a live one next to it is re-adopted."""
    fill(rgw, bucket)
    t1, t2 = pod_target(tmp_path, "pod1"), pod_target(tmp_path, "pod2")
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, t1), timeout=120)
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, t2, vol="vol-2"), timeout=120)
    csi.stop()
    subprocess.run(["umount", "-l", t2], check=True)
    csi.start()
    assert wait_for(lambda: not pids_with(t2), timeout=15)
    assert len(state_files(csi)) == 1 and not os.path.exists(t2)
    with open(os.path.join(t1, "a.txt"), "rb") as f:
        assert f.read() == b"hello lith\n"
    csi.node.NodeUnpublishVolume(csi.pb.NodeUnpublishVolumeRequest(volume_id="vol-1",
                                                                   target_path=t1))
    assert not state_files(csi) and not pids_with(t1)


@needs_takeover()
def test_restart_csi_then_sigkill_mounter(csi, rgw, bucket, tmp_path):
    """A re-adopted mounter is still supervised: its credentials came back
    from its own environment (never from disk), so it can be restarted."""
    want = big_object(rgw, bucket, 64 << 20)
    target = pod_target(tmp_path, "pod1")
    csi.node.NodePublishVolume(publish_req(csi, rgw, bucket, target), timeout=120)
    csi.stop()
    csi.start()
    assert "credentials=known" in csi.log()
    old = pids_with(target)
    r = Reader(os.path.join(target, "big.bin"), pause=0.01)
    r.start()
    assert wait_for(lambda: r.done_bytes >= 8 << 20, timeout=60)
    os.kill(old[0], signal.SIGKILL)
    r.join(120)
    assert r.error is None and r.digest == want
    assert wait_for(lambda: len(pids_with(target)) == 1 and pids_with(target) != old, timeout=30)
    assert not stats(csi, target).volume_condition.abnormal
