"""End-to-end tests of `lith csi`: a Python gRPC client (stubs generated at
test time from proto/csi.proto) plays kubelet and node-driver-registrar
against a real `lith cached`, real FUSE mounts and RGW.

Owns: the csi fixture (lith cached + lith csi in a temp dir, stopped and
every published target cleaned after the test) and the request builders.
"""

import importlib
import os
import subprocess
import sys
import time

import grpc
import pytest

import lithcli
from cachedd import Cached
from lithmount import mounted, pids_with

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
    def __init__(self, workdir, cached, pb):
        self.workdir, self.cached, (self.pb, self.rpc) = str(workdir), cached, pb
        self.sock = os.path.join(self.workdir, "csi.sock")
        self.state = os.path.join(self.workdir, "state")
        self.log_path = os.path.join(self.workdir, "csi.log")
        self.proc = None

    def start(self):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [lithcli.lith_bin(), "csi", "--endpoint", "unix://" + self.sock, "--node-id",
             "node-1", "--state-dir", self.state, "--cache-socket", self.cached.socket],
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
