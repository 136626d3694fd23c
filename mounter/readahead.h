/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-handle access-pattern detection: decides, for each read the kernel
 * sends, which fill kind labels it and what to prefetch ahead of it.
 *
 * Policy (one struct ra_state per open file handle):
 *  - Small files (size <= small_file): the first read asks for the whole
 *    object (kind whole); later reads are covered by it.
 *  - Sequential streams: a read starting at offset 0, or at most
 *    RA_SEQ_GAP (a page) past the end of the previous one, continues the stream
 *    (once the stream prefetches, within `slack`). A stream that starts at
 *    offset 0 prefetches at once; after a seek only once RA_SEQ_RUN reads
 *    in a row continued it, so ascending reads with gaps (a region query, a
 *    selective reader) do not look like one. It then keeps
 *    a prefetch frontier `ahead`; when less than half a window lies between
 *    the reader and the frontier, [ahead, pos + window) is prefetched (kind
 *    whole). Reads behind the frontier are labelled whole (a prediction
 *    covered them), reads beyond it demand.
 *  - The window starts at min_window and doubles, up to max_window, each
 *    time the reader is seen waiting: it caught up with the frontier, or the
 *    caller reports a read that stalled on a fill (ra_note_stall). A reader
 *    that never waits keeps a small window; one that waits on the link
 *    grows it until the link, not the window, is the limit.
 *  - Any other read is a seek: demand, no prefetch, the window resets.
 *  - A demand read of a stream that does not prefetch (yet) is `exact`: the
 *    daemon fetches just its bytes on a miss instead of whole blocks.
 * Reads that arrive slightly out of order (the kernel issues readahead
 * asynchronously to several FUSE threads) stay in the stream as long as
 * they fall within [pos - window - slack, pos + slack] and are as large as
 * the kernel's readahead chunks (RA_KERNEL_CHUNK); a small read further
 * ahead than RA_SEQ_GAP ends the stream (an application skipping data).
 *
 * Pure computation, no I/O, no locking: the caller serialises calls on one
 * state (fs_read.c holds the handle's mutex) and performs the prefetch.
 */
#ifndef LITH_MOUNTER_READAHEAD_H
#define LITH_MOUNTER_READAHEAD_H

#include <stdbool.h>
#include <stdint.h>

#include "fetch/cached/fill.h"

struct ra_config {
	uint64_t small_file;   /* fetch whole at or below this size (0: never) */
	uint64_t min_window;   /* first prefetch window */
	uint64_t max_window;   /* largest window */
	uint64_t slack;        /* how far a read may jump and stay sequential */
	uint64_t align;        /* prefetch frontiers are rounded up to this */
};

struct ra_state {
	uint64_t pos;          /* end of the furthest read of the stream */
	uint64_t ahead;        /* prefetched up to here */
	uint64_t window;
	bool started;          /* a read has been seen */
	bool whole;            /* small file: the whole object was asked for */
	bool streaming;        /* large file: this stream has prefetched */
	uint64_t seeks, prefetches;
	unsigned run;          /* reads in a row that continued the stream */
};

struct ra_plan {
	enum fill_kind kind;   /* label for this read's own fill */
	uint64_t pf_off, pf_len; /* prefetch to issue (pf_len 0: none) */
	enum fill_kind pf_kind;
	bool exact;            /* a random reader's fault: fetch just the bytes */
};

#define RA_SEQ_GAP (4u << 10)
#define RA_KERNEL_CHUNK (256u << 10) /* reads this large may come out of order */
#define RA_SEQ_RUN 3u

/* Fills in defaults for zero fields and clamps the rest. */
void ra_config_normalize(struct ra_config *c);
void ra_init(struct ra_state *s, const struct ra_config *c);
/* Plans the read [off, off + len) of an object of `size` bytes. */
void ra_plan_read(struct ra_state *s, const struct ra_config *c, uint64_t size, uint64_t off,
		  uint64_t len, struct ra_plan *ret);
/* The read at off waited for a fill: widen the window if it belongs to the
 * current stream. */
void ra_note_stall(struct ra_state *s, const struct ra_config *c, uint64_t off);

#endif
