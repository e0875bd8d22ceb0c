/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-connection state of the schemes that carry a TCP option or take notices (ceten, ern,
 * csumld; eten looks its sender's socket up the same way): the key every such map uses, built
 * alike from the three places a program meets a connection (a sock_ops callback, a struct_ops
 * callback's socket, a packet on tc), and the map shape they share.
 */
#ifndef SATLAB_FLOWS_H
#define SATLAB_FLOWS_H

#include "vmlinux.h"

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

/* A connection from this host's side (local = this host), IPv4, network byte order. */
struct flow_key {
	__be32 local;
	__be32 remote;
	__be16 lport;
	__be16 rport;
};

/*
 * An LRU hash (a connection that ends without telling anyone ages out), pinned by name under
 * the loader's pin directory: inspectable with bpftool map dump pinned ..., and shared with the
 * emulator where it writes one (eten_notices).
 */
#define PINNED_LRU_HASH(name, key_type, value_type, entries)	\
	struct {						\
		__uint(type, BPF_MAP_TYPE_LRU_HASH);		\
		__uint(max_entries, entries);			\
		__type(key, key_type);				\
		__type(value, value_type);			\
		__uint(pinning, LIBBPF_PIN_BY_NAME);		\
	} name SEC(".maps")

static __always_inline void skops_flow_key(const struct bpf_sock_ops *skops, struct flow_key *k)
{
	k->local = skops->local_ip4;
	k->remote = skops->remote_ip4;
	k->lport = bpf_htons((__u16)skops->local_port);	/* host order in sock_ops */
	k->rport = (__be16)(skops->remote_port >> 16);	/* network order, upper half */
}

/* The key of a struct_ops callback's socket. */
static __always_inline struct flow_key sk_flow_key(const struct sock *sk)
{
	struct flow_key k = {
		.local = sk->__sk_common.skc_rcv_saddr,
		.remote = sk->__sk_common.skc_daddr,
		.lport = bpf_htons(sk->__sk_common.skc_num),
		.rport = sk->__sk_common.skc_dport,
	};

	return k;
}

/* The entry of key, inserted as fresh first when there is none (NULL: the map refused it). */
static __always_inline void *map_lookup_or_init(void *map, const void *key, const void *fresh)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/*
 * The TCP socket in this network namespace that an IPv4 segment saddr:sport -> daddr:dport
 * would reach (listeners included), or NULL. The caller must bpf_sk_release() it.
 */
static __always_inline struct bpf_sock *sk_lookup_tcp4(struct __sk_buff *skb, __be32 saddr,
						       __be32 daddr, __be16 sport, __be16 dport)
{
	struct bpf_sock_tuple tuple = {};

	tuple.ipv4.saddr = saddr;
	tuple.ipv4.daddr = daddr;
	tuple.ipv4.sport = sport;
	tuple.ipv4.dport = dport;
	return bpf_sk_lookup_tcp(skb, &tuple, sizeof(tuple.ipv4), BPF_F_CURRENT_NETNS, 0);
}

/*
 * Asks the kernel to call sock_ops for every header option received (PARSE_HDR_OPT_CB: an
 * experimental option the kernel does not know is not passed on otherwise) and for room in
 * every header sent (HDR_OPT_LEN_CB, then WRITE_HDR_OPT_CB).
 */
static __always_inline void skops_all_header_options(struct bpf_sock_ops *skops)
{
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
				  BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG |
				  BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

#endif /* SATLAB_FLOWS_H */
