// SPDX-License-Identifier: GPL-2.0-only
/*
 * The namespace testbed's 802.1Q switch: the terminals of a beam whose terminals have VLAN IDs
 * (link.forward.beam.terminals[].vlan) reach the emulator's one st port as VLANs of it, as real
 * terminals' LANs would through a switch. It runs in the testbed's switch namespace `sw`
 * (api/satlab/testbed/vlan_switch.py loads it, fills its maps and attaches it):
 *
 *   st edge  --sat0~~[st  : access port, VLAN 101]--.
 *   st2 edge --sat0~~[st2 : access port, VLAN 102]--+-- [emu: trunk] ~~ the emulator's st port
 *
 * Why BPF and not the kernel's own switch: this kernel has neither VLAN devices (8021q) nor a
 * VLAN-filtering bridge (CONFIG_BRIDGE_VLAN_FILTERING), nor the u32/flower classifiers that
 * could push and pop tags with tc actions; tc's BPF classifier works, and its
 * bpf_skb_vlan_push/pop helpers need no 8021q.
 *
 * Each access port's tc ingress runs vsw_access: it tags the frame with the port's VLAN ID
 * (vsw_vlans: ifindex -> VLAN ID) and sends it out of the trunk (vsw_config.trunk_ifindex).
 * The trunk's tc ingress runs vsw_trunk: it finds the access port of the frame's VLAN ID
 * (vsw_ports: VLAN ID -> ifindex), takes the tag off and sends the frame out of that port, so a
 * broadcast (an ARP request the emulator tagged with the asked-for terminal's VLAN) reaches
 * that terminal only. Access ports never talk to each other: each VLAN has one access port and
 * the trunk. The kernel moves a received frame's 802.1Q tag into the packet's metadata before
 * tc ingress runs, so the tag is read from there (skb->vlan_present, vlan_tci), and push/pop
 * work on that metadata (the kernel writes it into the frame where a port needs it there).
 *
 * Dropped, and counted in vsw_stats by reason (as a real switch would drop them): an untagged
 * or non-802.1Q frame on the trunk, a VLAN ID no port has, a tagged frame on an access port,
 * a frame on a port the maps do not know (not yet configured). Every map is pinned by the
 * loader under the testbed's switch pin directory; the names are kept under the kernel's 15
 * characters for object names.
 */

#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "GPL";

#define TC_ACT_SHOT	2
#define ETH_P_8021Q	0x8100
#define VLAN_VID_MASK	0x0fff
#define VLAN_N_VID	4096
#define MAX_PORTS	1024	/* access ports: more than a beam's terminals on the testbed */

enum vsw_stat {
	STAT_TO_TRUNK,		/* frames an access port tagged and sent to the trunk */
	STAT_FROM_TRUNK,	/* frames of the trunk untagged and sent to their access port */
	STAT_UNTAGGED,		/* dropped: an untagged (or non-802.1Q) frame on the trunk */
	STAT_UNKNOWN_VID,	/* dropped: a VLAN ID no access port has */
	STAT_TAGGED_ON_ACCESS,	/* dropped: a tagged frame on an access port */
	STAT_UNCONFIGURED,	/* dropped: the port or the trunk is not in the maps */
	STAT_HELPER_FAILED,	/* dropped: the kernel refused to push or pop the tag */
	STAT_MAX,
};

struct vsw_config {
	__u32 trunk_ifindex;	/* the port toward the emulator's st port (0: not configured) */
};

#define STATS_MAP	vsw_stats
#define CONFIG_MAP	vsw_config
#define CONFIG_TYPE	struct vsw_config
#include "scheme_maps.h"

/* VLAN ID -> its access port's ifindex (0: no port). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VLAN_N_VID);
	__type(key, __u32);
	__type(value, __u32);
} vsw_ports SEC(".maps");

/* Access port's ifindex -> its VLAN ID. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} vsw_vlans SEC(".maps");

static __always_inline int drop(enum vsw_stat why)
{
	count(why);
	return TC_ACT_SHOT;
}

SEC("tc")
int vsw_access(struct __sk_buff *skb)
{
	__u32 port = skb->ifindex, zero = 0;
	struct vsw_config *cfg = bpf_map_lookup_elem(&vsw_config, &zero);
	__u32 *vid = bpf_map_lookup_elem(&vsw_vlans, &port);

	if (!cfg || !cfg->trunk_ifindex || !vid)
		return drop(STAT_UNCONFIGURED);
	if (skb->vlan_present)
		return drop(STAT_TAGGED_ON_ACCESS);
	if (bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), *vid & VLAN_VID_MASK))
		return drop(STAT_HELPER_FAILED);
	count(STAT_TO_TRUNK);
	return bpf_redirect(cfg->trunk_ifindex, 0);
}

SEC("tc")
int vsw_trunk(struct __sk_buff *skb)
{
	__u32 vid, *port;

	if (!skb->vlan_present || skb->vlan_proto != bpf_htons(ETH_P_8021Q))
		return drop(STAT_UNTAGGED);
	vid = skb->vlan_tci & VLAN_VID_MASK;
	port = bpf_map_lookup_elem(&vsw_ports, &vid);
	if (!port || !*port)
		return drop(STAT_UNKNOWN_VID);
	if (bpf_skb_vlan_pop(skb))
		return drop(STAT_HELPER_FAILED);
	count(STAT_FROM_TRUNK);
	return bpf_redirect(*port, 0);
}
