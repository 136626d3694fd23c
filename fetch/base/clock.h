/* SPDX-License-Identifier: Apache-2.0 */
/* Monotonic and wall clocks in nanoseconds / seconds. Header only. */
#ifndef LITH_BASE_CLOCK_H
#define LITH_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double clock_mono_s(void) { return (double)clock_mono_ns() / 1e9; }

#endif
