"""dataset — the objects the peer benchmark reads, and their sizes.

Owns: the two size presets (full: the sizes of issue 7; quick: the same
shapes scaled down for development), uploading the objects to the bed once
(a later run on the same bed reuses them when the sizes match), and the key
lists each shape reads. Every large object carries its SHA-256 in
x-amz-meta-sha256 so the stream shape can check what it read.

Bucket layout (one bucket, all systems read the same keys):
  stream/object.bin        the stream object (1 GiB)
  big/object.bin           the selective / random object (2 GiB)
  batch/part-N.bin         8 batch objects (256 MiB each)
  tree/dNN/file-NNNNN.dat  the small-file tree (2,000 x 16 KiB, 20 dirs)
"""

import concurrent.futures
import dataclasses
import hashlib
import os

BUCKET = "lith-peer-bench"
PART = 64 << 20                 # multipart part size of the uploads


@dataclasses.dataclass(frozen=True)
class Sizes:
    stream: int                 # bytes of the stream object
    big: int                    # bytes of the selective / random object
    batch_n: int                # batch objects
    batch_size: int             # bytes per batch object
    files: int                  # files in the tree
    file_size: int              # bytes per file
    selective_frac: float       # share of `big` the selective shape reads
    selective_piece: int        # bytes per selective read
    random_qd1: int             # 4 KiB preads at queue depth 1
    random_qd64: int            # 4 KiB preads at queue depth 64


FULL = Sizes(stream=1 << 30, big=2 << 30, batch_n=8, batch_size=256 << 20,
             files=2000, file_size=16 << 10, selective_frac=0.05,
             selective_piece=64 << 10, random_qd1=300, random_qd64=2048)
QUICK = Sizes(stream=64 << 20, big=256 << 20, batch_n=8, batch_size=16 << 20,
              files=200, file_size=16 << 10, selective_frac=0.05,
              selective_piece=64 << 10, random_qd1=60, random_qd64=256)

STREAM_KEY = "stream/object.bin"
BIG_KEY = "big/object.bin"


def batch_keys(sizes):
    return [f"batch/part-{i}.bin" for i in range(sizes.batch_n)]


def tree_keys(sizes):
    """Tree keys in key (lexicographic) order: the order `small` reads them."""
    return sorted(f"tree/d{i % 20:02d}/file-{i:05d}.dat" for i in range(sizes.files))


def _upload_big(s3, key, size, seed_chunk, threads=4):
    """Multipart upload of `size` bytes; returns the object's SHA-256."""
    up = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    nparts = (size + PART - 1) // PART
    salt = hashlib.sha256(key.encode()).digest()[:8]

    def body(n):
        # part number and key stamped in: no two parts or objects are equal
        data = n.to_bytes(8, "little") + salt + seed_chunk[16:]
        return data[:min(PART, size - (n - 1) * PART)]

    def put(n):
        r = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=n, Body=body(n))
        return {"ETag": r["ETag"], "PartNumber": n}

    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        parts = list(ex.map(put, range(1, nparts + 1)))
    digest = hashlib.sha256()
    for n in range(1, nparts + 1):
        digest.update(body(n))
    s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up,
                                 MultipartUpload={"Parts": parts})
    # metadata cannot be added to a completed multipart upload without a
    # copy; keep the digest in a small sidecar object instead
    s3.put_object(Bucket="lith-peer-bench-meta", Key=key, Body=digest.hexdigest().encode())
    return digest.hexdigest()


def _have(s3, key, size):
    try:
        return s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"] == size
    except Exception:
        return False


def _digest(s3, key):
    try:
        return s3.get_object(Bucket="lith-peer-bench-meta", Key=key)["Body"].read().decode()
    except Exception:
        return None


def ensure(bed, sizes, log=print):
    """Upload what is missing; returns {key: sha256} of the large objects."""
    s3 = bed.client()
    for b in (BUCKET, "lith-peer-bench-meta"):
        try:
            bed.make_bucket(b)
        except Exception:
            pass
    seed_chunk = os.urandom(PART)
    digests = {}
    bigs = [(STREAM_KEY, sizes.stream), (BIG_KEY, sizes.big)]
    bigs += [(k, sizes.batch_size) for k in batch_keys(sizes)]
    for key, size in bigs:
        digest = _digest(s3, key) if _have(s3, key, size) else None
        if digest is None:
            log(f"  uploading {key} ({size >> 20} MiB)")
            digest = _upload_big(s3, key, size, seed_chunk)
        digests[key] = digest
    keys = tree_keys(sizes)
    if not all(_have(s3, k, sizes.file_size) for k in (keys[0], keys[-1])) or \
            _count(s3, "tree/") != len(keys):
        log(f"  uploading {len(keys)} files of {sizes.file_size >> 10} KiB")
        _clear(s3, "tree/")
        body = os.urandom(sizes.file_size)
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda k: s3.put_object(Bucket=BUCKET, Key=k, Body=body), keys))
    return digests


def _count(s3, prefix):
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sum(p.get("KeyCount", 0) for p in pages)


def _clear(s3, prefix):
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    for p in pages:
        objs = [{"Key": o["Key"]} for o in p.get("Contents", [])]
        if objs:
            s3.delete_objects(Bucket=BUCKET, Delete={"Objects": objs})
