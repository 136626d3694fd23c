#!/usr/bin/python3
"""kubelet.py — drive lith's CSI socket the way kubelet does, for the demo
and for operators poking at a node by hand.

  kubelet.py --csi unix:///path/csi.sock info
  kubelet.py --csi ... publish --volume-id V --target DIR --bucket B [--prefix P]
             [--endpoint URL] [--pod NAME --namespace NS]   (secrets: AWS_ACCESS_KEY_ID,
             AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, as a nodePublishSecretRef would)
  kubelet.py --csi ... stats --volume-id V --target DIR
  kubelet.py --csi ... unpublish --volume-id V --target DIR

Stubs are generated from proto/csi.proto at run time with grpc_tools (Debian's
python3-grpc-tools); nothing generated is kept.
"""

import argparse
import importlib
import os
import subprocess
import sys
import tempfile

import grpc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stubs(tmp):
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", os.path.join(ROOT, "proto"),
                    f"--python_out={tmp}", f"--grpc_python_out={tmp}",
                    os.path.join(ROOT, "proto", "csi.proto")], check=True)
    sys.path.insert(0, tmp)
    return importlib.import_module("csi_pb2"), importlib.import_module("csi_pb2_grpc")


def info(pb, ident, node, _args):
    pi = ident.GetPluginInfo(pb.GetPluginInfoRequest(), timeout=30)
    print(f"plugin {pi.name} {pi.vendor_version} {dict(pi.manifest)}")
    print(f"probe ready={ident.Probe(pb.ProbeRequest(), timeout=30).ready.value}")
    ni = node.NodeGetInfo(pb.NodeGetInfoRequest(), timeout=30)
    print(f"node {ni.node_id}")
    caps = node.NodeGetCapabilities(pb.NodeGetCapabilitiesRequest(), timeout=30)
    print("node capabilities", [pb.NodeServiceCapability.RPC.Type.Name(c.rpc.type)
                                for c in caps.capabilities])


def publish(pb, _ident, node, a):
    mode = pb.VolumeCapability.AccessMode(mode=pb.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY)
    cap = pb.VolumeCapability(access_mode=mode)
    cap.mount.fs_type = "fuse"
    ctx = {"bucket": a.bucket, "csi.storage.k8s.io/pod.name": a.pod,
           "csi.storage.k8s.io/pod.namespace": a.namespace,
           "csi.storage.k8s.io/pod.uid": "demo-uid",
           "csi.storage.k8s.io/serviceAccount.name": "default",
           "csi.storage.k8s.io/ephemeral": "false"}
    if a.prefix:
        ctx["prefix"] = a.prefix
    if a.endpoint:
        ctx.update(endpoint=a.endpoint, pathStyle="true")
    secrets = {k: os.environ[e] for k, e in (("accessKeyID", "AWS_ACCESS_KEY_ID"),
                                             ("secretAccessKey", "AWS_SECRET_ACCESS_KEY"),
                                             ("sessionToken", "AWS_SESSION_TOKEN"))
               if os.environ.get(e)}
    node.NodePublishVolume(pb.NodePublishVolumeRequest(
        volume_id=a.volume_id, target_path=a.target, volume_capability=cap, readonly=True,
        secrets=secrets, volume_context=ctx), timeout=300)
    print(f"published {a.volume_id} at {a.target}")


def stats(pb, _ident, node, a):
    r = node.NodeGetVolumeStats(pb.NodeGetVolumeStatsRequest(volume_id=a.volume_id,
                                                             volume_path=a.target), timeout=30)
    for u in r.usage:
        print(f"usage {pb.VolumeUsage.Unit.Name(u.unit)} used={u.used} total={u.total}")
    print(f"condition abnormal={r.volume_condition.abnormal} {r.volume_condition.message}")


def unpublish(pb, _ident, node, a):
    node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(volume_id=a.volume_id,
                                                           target_path=a.target), timeout=120)
    print(f"unpublished {a.target}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csi", required=True, help="unix:///path/csi.sock")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info")
    for name in ("publish", "stats", "unpublish"):
        p = sub.add_parser(name)
        p.add_argument("--volume-id", required=True)
        p.add_argument("--target", required=True)
        if name == "publish":
            p.add_argument("--bucket", required=True)
            p.add_argument("--prefix", default="")
            p.add_argument("--endpoint", default="")
            p.add_argument("--pod", default="demo-pod")
            p.add_argument("--namespace", default="default")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pb, rpc = stubs(tmp)
        chan = grpc.insecure_channel(a.csi)
        grpc.channel_ready_future(chan).result(timeout=30)
        run = {"info": info, "publish": publish, "stats": stats, "unpublish": unpublish}[a.cmd]
        try:
            run(pb, rpc.IdentityStub(chan), rpc.NodeStub(chan), a)
        except grpc.RpcError as e:
            print(f"kubelet.py {a.cmd}: {e.code().name}: {e.details()}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
