/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The maps every scheme with counters shares in shape, named after the scheme (sl-scheme finds
 * them by those names: it fills the settings before attaching and prints the counters when it
 * stops). The including file defines, before including this header:
 *   STATS_MAP                 the counters' map (e.g. eten_stats), one __u64 per index of the
 *                             file's STAT_* enum, which ends in STAT_MAX
 *   CONFIG_MAP, CONFIG_TYPE   optional: the one-entry settings map and its struct
 * and gets count() and uncount() on the counters. Maps are per loaded instance.
 */
#ifndef SATLAB_SCHEME_MAPS_H
#define SATLAB_SCHEME_MAPS_H

#ifndef STATS_MAP
#error "define STATS_MAP (the counters map's name) before including scheme_maps.h"
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} STATS_MAP SEC(".maps");

#ifdef CONFIG_MAP
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, CONFIG_TYPE);
} CONFIG_MAP SEC(".maps");
#endif

static __always_inline void count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&STATS_MAP, &stat);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* Takes back a count (a loss first counted as congestion that a late notice shows was not). */
static __always_inline void uncount(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&STATS_MAP, &stat);

	if (v)
		__sync_fetch_and_sub(v, 1);
}

#endif
