"""pytest fixtures for lith's end-to-end tests.

This file owns:
  rgw      (session) a running RgwBed: started once per session in a temp dir
           and stopped at the end; or, when env LITH_RGW_DIR names a directory
           holding a running bed (bed.json, from `rgwbed.py up --dir D`), that
           bed, which is left running.
  bucket   (function) a fresh bucket of user 1, emptied and deleted afterwards
  make_bucket (function) factory: make_bucket(prefix="t") -> new bucket name
  proxy    (function) factory: proxy(profile="none", **config) -> started
           S3Proxy in front of rgw; all are stopped after the test
  vhost    (function) makes NAME.localhost resolve to 127.0.0.1 in this
           process, for boto3 clients with addressing_style="virtual"
"""

import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rgwbed import STATE_FILE, BedError, RgwBed, localhost_subdomains  # noqa: E402
from s3proxy import S3Proxy  # noqa: E402


@pytest.fixture(scope="session")
def rgw(tmp_path_factory):
    reuse = os.environ.get("LITH_RGW_DIR")
    if reuse and os.path.exists(os.path.join(reuse, STATE_FILE)):
        try:
            bed = RgwBed.attach(reuse)
        except BedError as e:
            pytest.exit(f"LITH_RGW_DIR={reuse}: {e}; restart it with "
                        f"`rgwbed.py up --dir {reuse}` or unset LITH_RGW_DIR", 2)
        yield bed
        return
    bed = RgwBed(str(tmp_path_factory.mktemp("rgwbed")))
    bed.start()
    try:
        yield bed
    finally:
        bed.stop()


def _delete_bucket(rgw, name):
    """Best effort: remove every object (and pending upload), then the bucket."""
    s3 = rgw.client()
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                s3.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})
        for up in s3.list_multipart_uploads(Bucket=name).get("Uploads", []):
            s3.abort_multipart_upload(Bucket=name, Key=up["Key"], UploadId=up["UploadId"])
        s3.delete_bucket(Bucket=name)
    except Exception:
        pass


@pytest.fixture
def make_bucket(rgw):
    made = []

    def make(prefix="t"):
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        rgw.make_bucket(name)
        made.append(name)
        return name
    yield make
    for name in made:
        _delete_bucket(rgw, name)


@pytest.fixture
def bucket(make_bucket):
    return make_bucket()


@pytest.fixture
def proxy(rgw, tmp_path):
    started = []

    def make(profile="none", **config):
        workdir = str(tmp_path / f"s3proxy{len(started)}")
        px = S3Proxy(rgw.port, profile=profile, workdir=workdir, **config)
        started.append(px)
        return px.start()
    yield make
    for px in started:
        px.stop()


@pytest.fixture
def vhost():
    with localhost_subdomains():
        yield
