// SPDX-License-Identifier: GPL-2.0-only
/*
 * sl_beten / sl_oracle: per-packet ETEN senders (ETEN report, BBN TR 8333, sections 2-3;
 * "Explicit Transport Error Notification (ETEN) for Error-Prone Wireless and Satellite Networks", BBN TR 8333, Oracle ETEN and BETEN).
 *
 * A notice says "the segment (flow, seq) was lost to corruption on the satellite link".
 * Notices land in one map, eten_notices, from two sources:
 *   - BETEN: the satellite edge's ICMP notice (crates/packet/src/eten.rs) reaches this host
 *     over the return path, delayed and lossy like any packet; the tc ingress program
 *     eten_ingress below validates it and records it (source 2).
 *   - Oracle: the emulator writes the entry itself the instant it corrupts or erases the
 *     packet, with no delay and no loss (docs/emulator-contract.md, "Oracle ETEN"; source 1).
 *     The report's upper bound; the same congestion control reads it.
 *
 * The congestion control is sl_newreno (newreno.bpf.c) except for one decision: when the
 * kernel detects a loss and asks for a new ssthresh, the segment at snd_una (the first hole,
 * the one whose loss started recovery) is looked up; if it was notified, the loss is
 * corruption: "retransmit without changing congestion state" (report section 2.3,
 * "Per-packet sender response"). The kernel retransmits as for any loss (fast retransmit,
 * SACK recovery, RACK); cwnd and ssthresh stay what they were (keep_window.h says how).
 *   - A recovery episode is classified by its first loss only (one ssthresh() call per
 *     episode, as in the kernel). The report decides per loss; with one reduction per window
 *     the two agree unless a congestion loss and a notified loss share a window.
 *   - The dupacks that later arrive for an already notified segment do not cut the window
 *     either (the report is silent; its intent implies they should not).
 *   - A late notice still counts: the notice and the first dupacks/SACKs after a corrupted
 *     segment travel the same return path and arrive within a millisecond of each other on a
 *     paced link, so recovery may start before the notice is in. While that recovery lasts,
 *     every ACK checks whether the segment that started it has been notified since; if so
 *     the reduction is withdrawn (ssthresh back to the pre-loss cwnd, so PRR and the end of
 *     recovery restore the window) and the loss is recounted as corruption (late_notice).
 *
 * Validation of a BETEN notice before it counts (report section 7):
 *   ICMP checksum; format version; rate bound (token bucket, before the expensive checks);
 *   MAC when a key is configured (a notice without one is refused); the quoted packet must
 *   be TCP from this host and match an existing connection (socket lookup); its sequence
 *   must lie in [snd_una, snd_nxt); a notice for a (flow, seq) already recorded is a
 *   duplicate. Each refusal is counted by reason in eten_stats; refused notices are dropped.
 */

#include "flows.h"
#include "hmac_sha256.h"
#include "keep_window.h"

char _license[] SEC("license") = "GPL";

#define ETH_P_IP	0x0800
#define ETH_HLEN	14
#define IPPROTO_ICMP	1
#define IPPROTO_TCP	6
#define TC_ACT_OK	0
#define TC_ACT_SHOT	2

#define ETEN_ICMP_TYPE	253
#define ETEN_VERSION	1
#define ETEN_LEN	36
#define ETEN_LEN_MAC	52
#define ETEN_FLAG_MAC	0x01

/* Identical to the emulator's Oracle writer (emulator/src/oracle.rs): network byte order. */
struct eten_key {
	__be32 saddr;	/* the data segment's source: this host */
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__be32 seq;	/* the segment's sequence number as on the wire */
};

struct eten_val {
	__u64 t_ns;	/* CLOCK_MONOTONIC (bpf_ktime_get_ns) when recorded */
	__u32 code;	/* 0 corrupted, 1 erased (eten.rs code) */
	__u32 source;	/* 1 oracle (emulator), 2 BETEN notice */
};

enum eten_source { SOURCE_ORACLE = 1, SOURCE_BETEN = 2 };

/* Counter indexes of eten_stats; the loader prints them by these names (sl-scheme.c). */
enum eten_stat {
	STAT_NOTICES_SEEN,		/* ICMP type 253 arriving */
	STAT_ACCEPTED,
	STAT_MALFORMED,			/* too short, bad checksum, unknown version, not TCP */
	STAT_RATE_LIMITED,
	STAT_NO_MAC,			/* key configured, notice unsigned */
	STAT_BAD_MAC,
	STAT_UNKNOWN_FLOW,
	STAT_OUT_OF_WINDOW,
	STAT_DUPLICATE,
	STAT_LOSS_CORRUPTION,		/* losses the congestion control treated as corruption */
	STAT_LOSS_CONGESTION,		/* losses it treated as congestion (window cut) */
	STAT_LATE_NOTICE,		/* of the corruption losses: notice came after recovery began */
	STAT_MAX,
};

struct eten_config {
	__u32 rate_per_s;		/* token bucket refill; 0: no bound */
	__u32 burst;			/* bucket depth, notices */
	__u32 key_len;			/* 0: notices need no MAC */
	__u32 pad;
	__u8 key[HMAC_KEY_MAX];
};

struct eten_bucket {
	__u64 tokens_ns;		/* credit in notice-nanoseconds: one notice costs 1e9 */
	__u64 last_ns;
};

/* Pinned by name under the loader's pin directory (one per testbed), so the emulator's
 * Oracle writer and the operator (bpftool map dump pinned ...) find it; every sending host
 * of the testbed shares it (keys carry the host's address). */
PINNED_LRU_HASH(eten_notices, struct eten_key, struct eten_val, 65536);

#define STATS_MAP eten_stats
#define CONFIG_MAP eten_config
#define CONFIG_TYPE struct eten_config
#include "scheme_maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eten_bucket);
} eten_bucket SEC(".maps");

/* Token bucket. Concurrent CPUs may each spend the same token: the bound is approximate
 * by at most the number of CPUs, which is enough against a flood. */
static __always_inline int rate_ok(const struct eten_config *cfg)
{
	__u32 zero = 0;
	struct eten_bucket *b = bpf_map_lookup_elem(&eten_bucket, &zero);
	__u64 now = bpf_ktime_get_ns(), cap, credit;

	if (!b || cfg->rate_per_s == 0)
		return 1;
	cap = (__u64)cfg->burst * 1000000000ULL;
	credit = b->tokens_ns + (now - b->last_ns) * cfg->rate_per_s;
	if (b->last_ns == 0 || credit > cap)
		credit = cap;
	b->last_ns = now;
	if (credit < 1000000000ULL) {
		b->tokens_ns = credit;
		return 0;
	}
	b->tokens_ns = credit - 1000000000ULL;
	return 1;
}

/* Internet checksum of len bytes (a multiple of 4) is valid when it folds to 0xffff. */
static __always_inline int icmp_checksum_ok(const __u8 *msg, __u32 len)
{
	__s64 sum = bpf_csum_diff(NULL, 0, (__be32 *)msg, len, 0);
	__u32 s;

	if (sum < 0)
		return 0;
	s = (__u32)sum;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

/* seq in [una, nxt), modulo 2^32 */
static __always_inline int seq_in_window(__u32 seq, __u32 una, __u32 nxt)
{
	return seq - una < nxt - una;
}

SEC("tc")
int eten_ingress(struct __sk_buff *skb)
{
	__u8 msg[ETEN_LEN_MAC] = {};
	struct iphdr ip;
	__u32 zero = 0, icmp_off, icmp_len;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0)
		return TC_ACT_OK;
	if (ip.protocol != IPPROTO_ICMP || ip.ihl < 5)
		return TC_ACT_OK;
	icmp_off = ETH_HLEN + ip.ihl * 4;
	if (bpf_skb_load_bytes(skb, icmp_off, msg, 1) < 0 || msg[0] != ETEN_ICMP_TYPE)
		return TC_ACT_OK;

	/* From here on the packet is an ETEN notice: consumed (dropped) whatever the verdict. */
	count(STAT_NOTICES_SEEN);
	icmp_len = bpf_ntohs(ip.tot_len) - ip.ihl * 4;
	if (icmp_len != ETEN_LEN && icmp_len != ETEN_LEN_MAC)
		goto malformed;
	if (icmp_len == ETEN_LEN_MAC) {
		if (bpf_skb_load_bytes(skb, icmp_off, msg, ETEN_LEN_MAC) < 0 ||
		    !icmp_checksum_ok(msg, ETEN_LEN_MAC))
			goto malformed;
	} else {
		if (bpf_skb_load_bytes(skb, icmp_off, msg, ETEN_LEN) < 0 ||
		    !icmp_checksum_ok(msg, ETEN_LEN))
			goto malformed;
	}
	if (msg[4] != ETEN_VERSION)
		goto malformed;
	/* quoted IPv4 header at 8..28, transport bytes at 28..36 */
	if (msg[8 + 9] != IPPROTO_TCP)
		goto malformed;

	struct eten_config *cfg = bpf_map_lookup_elem(&eten_config, &zero);

	if (!cfg)
		return TC_ACT_SHOT;
	if (!rate_ok(cfg)) {
		count(STAT_RATE_LIMITED);
		return TC_ACT_SHOT;
	}
	if (cfg->key_len) {
		if (!(msg[5] & ETEN_FLAG_MAC) || icmp_len != ETEN_LEN_MAC) {
			count(STAT_NO_MAC);
			return TC_ACT_SHOT;
		}
		msg[2] = 0;	/* the MAC covers the message with its checksum zeroed */
		msg[3] = 0;
		if (!hmac_sha256_16_ok(cfg->key, msg, msg + ETEN_LEN)) {
			count(STAT_BAD_MAC);
			return TC_ACT_SHOT;
		}
	}

	struct eten_key key = {};

	__builtin_memcpy(&key.saddr, msg + 8 + 12, 4);
	__builtin_memcpy(&key.daddr, msg + 8 + 16, 4);
	__builtin_memcpy(&key.sport, msg + 28, 2);
	__builtin_memcpy(&key.dport, msg + 30, 2);
	__builtin_memcpy(&key.seq, msg + 32, 4);

	/* The sender's socket, as an incoming packet of that connection would find it. */
	struct bpf_sock *sk = sk_lookup_tcp4(skb, key.daddr, key.saddr, key.dport, key.sport);

	if (!sk) {
		count(STAT_UNKNOWN_FLOW);
		return TC_ACT_SHOT;
	}
	struct bpf_tcp_sock *tp = bpf_tcp_sock(sk);
	int in_window = tp && seq_in_window(bpf_ntohl(key.seq), tp->snd_una, tp->snd_nxt);

	bpf_sk_release(sk);
	if (!in_window) {
		count(STAT_OUT_OF_WINDOW);
		return TC_ACT_SHOT;
	}

	struct eten_val val = {
		.t_ns = bpf_ktime_get_ns(),
		.code = msg[1],
		.source = SOURCE_BETEN,
	};

	if (bpf_map_update_elem(&eten_notices, &key, &val, BPF_NOEXIST) < 0) {
		count(STAT_DUPLICATE);
		return TC_ACT_SHOT;
	}
	count(STAT_ACCEPTED);
	return TC_ACT_SHOT;

malformed:
	count(STAT_MALFORMED);
	return TC_ACT_SHOT;
}

/* ---- the congestion control ---- */

/* Was the segment at seq notified? Consumes the notice. */
static __always_inline int notified(struct sock *sk, __u32 seq)
{
	struct eten_key key = {
		.saddr = sk->__sk_common.skc_rcv_saddr,
		.daddr = sk->__sk_common.skc_daddr,
		.sport = bpf_htons(sk->__sk_common.skc_num),
		.dport = sk->__sk_common.skc_dport,
		.seq = bpf_htonl(seq),
	};

	if (!bpf_map_lookup_elem(&eten_notices, &key))
		return 0;
	bpf_map_delete_elem(&eten_notices, &key);
	return 1;
}

#include "notified_loss.h"

NOTIFIED_LOSS_OPS(beten_ops, "sl_beten");
