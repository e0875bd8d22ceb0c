// SPDX-License-Identifier: GPL-2.0-only
/*
 * sl_csumld: receiver checksum-based loss differentiation (Garcia & Brunstrom 2004;
 * "An Experimental Study on the Performance and Fairness of Loss Differentiation for TCP" (Garcia, Brunstrom)).
 *
 * The paper's mechanism, FreeBSD 4.5 (A1): a segment whose IP header checksum is bad is dropped
 * by IP (it cannot be mapped to a flow, so its loss is implicitly congestion); a segment with a
 * valid IP header and a bad TCP checksum is matched to its flow, the sender is told "corruption"
 * in a TCP option, and the segment is discarded. The sender retransmits without a cut. Here:
 *
 *   receiver  csumld_ingress (tc ingress on the host's interface) checks, for every IPv4 TCP
 *             segment, the IP header checksum and the TCP checksum. Valid IP header + bad TCP
 *             checksum + data: the flow is looked up (bpf_sk_lookup_tcp, the socket the segment
 *             would reach) and the segment's sequence number queued in csumld_pending under that
 *             connection. The segment itself is passed on: the kernel discards it (TcpInCsumErrors).
 *             csumld_sockops (the receiver's cgroup) reserves room for the notice option in the
 *             next segment the connection sends (HDR_OPT_LEN) while one is queued, and writes it
 *             (WRITE_HDR_OPT): the corrupted segment's successor triggers a duplicate ACK at once,
 *             so the notice travels on the first dupACK. One notice per segment; more queued
 *             ones go on the following ACKs.
 *   sender    csumld_sockops (the sender's cgroup) parses the option on every ACK; a sequence
 *             number inside [snd_una, snd_nxt) is recorded in csumld_notices (flow, seq). The
 *             congestion control treats a loss at snd_una whose seq was notified as corruption,
 *             exactly as sl_beten does with ETEN notices (eten.bpf.c: the same ssthresh()/late
 *             notice logic and keep_window.h's loss response); any other loss is NewReno's.
 *
 * The corruption-notice option (TCP experimental option, RFC 6994 shared kind 254):
 *
 *     0        1        2        3        4        5        6        7
 *   +--------+--------+--------+--------+--------+--------+--------+--------+
 *   | kind   | length |  ExID 0x4353     |  sequence number of the corrupted |
 *   | 254    | 8      |  ("CS")          |  segment, network order           |
 *   +--------+--------+--------+--------+--------+--------+--------+--------+
 *
 * Eight bytes so that it fits next to timestamps (12) and two SACK blocks (20) in the 40 bytes of
 * option space; the kernel gives a BPF option only what SACK leaves, so on an ACK with three SACK
 * blocks the notice waits for the next ACK (sl_beten's late-notice path then still withdraws the
 * cut). The ExID is distinct from CETEN's 0x4345 (crates/packet/src/ceten.rs).
 *
 * Misclassification (A1: "corruption is mistaken for congestion only when errors hit header
 * fields"), counted in csumld_stats by where it happens:
 *   ip_header_bad    IPv4 packets whose header checksum fails: dropped by IP, never notified;
 *   unknown_flow     a bad TCP checksum whose addresses/ports match no connection (ports hit);
 *   rx_out_of_window its sequence number is not at or after rcv_nxt (within 2^30): seq hit, or a
 *                    corrupted copy of data already received (no loss to notify);
 *   tx_out_of_window a notice whose sequence number is outside the sender's [snd_una, snd_nxt).
 * A hit in the sequence field that still lands inside the window notifies the wrong segment; it
 * cannot be told apart (as in the paper). Corrupted segments without data (pure ACKs) are counted
 * as no_payload and ignored: their loss costs nothing that a later ACK does not repair.
 *
 * The pending queue is written by tc (softirq) and read by sockops on the same receive path; a
 * race between CPUs can at worst lose or repeat one notice, which the sender's window check and
 * duplicate test absorb.
 */

#include "flows.h"
#include "keep_window.h"

char _license[] SEC("license") = "GPL";

#define ETH_P_IP	0x0800
#define ETH_HLEN	14
#define IPPROTO_TCP	6
#define TC_ACT_OK	0
#define IP_MF		0x2000
#define IP_OFFSET	0x1fff

#define CSLD_KIND	254
#define CSLD_LEN	8
#define CSLD_EXID_HI	0x43	/* 'C' */
#define CSLD_EXID_LO	0x53	/* 'S' */

#define PENDING_MAX	8	/* notices queued per connection at the receiver */
#define CHUNK		256	/* bytes summed per bpf_csum_diff call */
#define MAX_CHUNKS	6	/* segments up to 1536 bytes: the testbed's MTUs are <= 1500 */
#define RX_WINDOW	(1U << 30)

/* Counter indexes of csumld_stats (satlab.schemes.CSUMLD_STATS). */
enum csumld_stat {
	/* receiver */
	STAT_TCP_CHECKED,		/* IPv4 TCP segments whose checksum tc verified */
	STAT_BAD_CHECKSUM,		/* ... bad TCP checksum, valid IP header */
	STAT_IP_HEADER_BAD,		/* IPv4 packets with a bad header checksum */
	STAT_NO_PAYLOAD,
	STAT_UNKNOWN_FLOW,
	STAT_RX_OUT_OF_WINDOW,
	STAT_TOO_LONG,			/* longer than MAX_CHUNKS * CHUNK: not checked */
	STAT_QUEUED,			/* notices queued for the connection's next ACK */
	STAT_QUEUE_FULL,		/* oldest pending notice dropped for a newer one */
	STAT_OPTIONS_WRITTEN,
	/* sender */
	STAT_OPTIONS_PARSED,
	STAT_TX_OUT_OF_WINDOW,
	STAT_DUPLICATE,
	STAT_LOSS_CORRUPTION,
	STAT_LOSS_CONGESTION,
	STAT_LATE_NOTICE,
	STAT_MAX,
};

struct notice_key {
	struct flow_key flow;	/* the sender's view: local = the sender */
	__u32 seq;		/* host order */
};

struct pending {
	__u32 head;		/* next slot to write (free-running) */
	__u32 tail;		/* next slot to send */
	__u32 seq[PENDING_MAX];	/* network order, as in the segment */
};

struct scratch {
	__u8 buf[CHUNK + 4];	/* + the zero padding of a partial last word */
};

/* receiver: connection -> notices not yet sent */
PINNED_LRU_HASH(csumld_pending, struct flow_key, struct pending, 4096);

/* sender: (connection, seq) notified as corrupted, consumed by the congestion control;
 * the value is bpf_ktime_get_ns when recorded */
PINNED_LRU_HASH(csumld_notices, struct notice_key, __u64, 65536);

#define STATS_MAP csumld_stats
#include "scheme_maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} csumld_scratch SEC(".maps");

static __always_inline __u32 fold(__s64 sum)
{
	__u32 s = (__u32)sum;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return s;
}

/* Ones'-complement sum of len bytes at off, continued from seed; < 0 on a read error. */
static __always_inline __s64 sum_bytes(struct __sk_buff *skb, __u32 off, __u32 len, __s64 seed,
				       __u8 *buf)
{
	__s64 sum = seed;

#pragma unroll
	for (int i = 0; i < MAX_CHUNKS; i++) {
		__u32 done = i * CHUNK;
		__u32 n;

		if (done >= len)
			break;
		n = len - done;
		if (n > CHUNK)
			n = CHUNK;
		if (n & 3)	/* an odd tail is summed as if padded with zeros */
			*(__u32 *)(buf + (n & 0xfc)) = 0;
		if (bpf_skb_load_bytes(skb, off + done, buf, n) < 0)
			return -1;
		sum = bpf_csum_diff(NULL, 0, (__be32 *)buf, (n + 3) & 0x1fc, (__u32)sum);
		if (sum < 0)
			return -1;
	}
	return sum;
}

/* The receiver's queue: (local = the segment's destination, remote = its source). */
static __always_inline void queue_notice(const struct iphdr *ip, const struct tcphdr *th)
{
	struct flow_key key = {
		.local = ip->daddr,
		.remote = ip->saddr,
		.lport = th->dest,
		.rport = th->source,
	};
	struct pending fresh = {}, *p;

	p = map_lookup_or_init(&csumld_pending, &key, &fresh);
	if (!p)
		return;
	if (p->head - p->tail >= PENDING_MAX) {
		p->tail++;
		count(STAT_QUEUE_FULL);
	}
	p->seq[p->head % PENDING_MAX] = th->seq;
	p->head++;
	count(STAT_QUEUED);
}

SEC("tc")
int csumld_ingress(struct __sk_buff *skb)
{
	__u32 zero = 0, ip_len, hlen, tcp_len, payload;
	struct scratch *scr;
	struct iphdr ip;
	struct tcphdr th;
	__s64 sum;

	if (skb->protocol != bpf_htons(ETH_P_IP))
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) < 0)
		return TC_ACT_OK;
	hlen = ip.ihl * 4;
	if (ip.version != 4 || hlen < sizeof(ip))
		return TC_ACT_OK;
	scr = bpf_map_lookup_elem(&csumld_scratch, &zero);
	if (!scr)
		return TC_ACT_OK;

	/* What ip_rcv checks first: a bad header is dropped there, whatever this program does. */
	sum = sum_bytes(skb, ETH_HLEN, hlen, 0, scr->buf);
	if (sum < 0)
		return TC_ACT_OK;
	if (fold(sum) != 0xffff) {
		count(STAT_IP_HEADER_BAD);
		return TC_ACT_OK;
	}
	if (ip.protocol != IPPROTO_TCP || (ip.frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return TC_ACT_OK;
	ip_len = bpf_ntohs(ip.tot_len);
	if (ip_len < hlen + sizeof(th) || ip_len > skb->len - ETH_HLEN)
		return TC_ACT_OK;
	tcp_len = ip_len - hlen;
	if (tcp_len > MAX_CHUNKS * CHUNK) {
		count(STAT_TOO_LONG);
		return TC_ACT_OK;
	}

	/* TCP checksum: pseudo-header (RFC 793), then the segment. */
	struct {
		__be32 saddr;
		__be32 daddr;
		__u8 zero;
		__u8 proto;
		__be16 len;
	} ph = { ip.saddr, ip.daddr, 0, IPPROTO_TCP, bpf_htons((__u16)tcp_len) };

	sum = bpf_csum_diff(NULL, 0, (__be32 *)&ph, sizeof(ph), 0);
	if (sum < 0)
		return TC_ACT_OK;
	sum = sum_bytes(skb, ETH_HLEN + hlen, tcp_len, sum, scr->buf);
	if (sum < 0)
		return TC_ACT_OK;
	count(STAT_TCP_CHECKED);
	if (fold(sum) == 0xffff)
		return TC_ACT_OK;
	count(STAT_BAD_CHECKSUM);

	if (bpf_skb_load_bytes(skb, ETH_HLEN + hlen, &th, sizeof(th)) < 0)
		return TC_ACT_OK;
	payload = tcp_len - th.doff * 4;
	if (th.doff < 5 || th.doff * 4U > tcp_len || payload == 0) {
		count(STAT_NO_PAYLOAD);
		return TC_ACT_OK;
	}

	/* The connection the segment would reach (an established one, not a listener). */
	struct bpf_sock *sk = sk_lookup_tcp4(skb, ip.saddr, ip.daddr, th.source, th.dest);

	if (!sk) {
		count(STAT_UNKNOWN_FLOW);
		return TC_ACT_OK;
	}
	if (sk->state == BPF_TCP_LISTEN) {
		bpf_sk_release(sk);
		count(STAT_UNKNOWN_FLOW);
		return TC_ACT_OK;
	}
	struct bpf_tcp_sock *tp = bpf_tcp_sock(sk);
	/* not yet received in full: its end lies beyond rcv_nxt, and not absurdly far */
	int in_window = tp && bpf_ntohl(th.seq) + payload - tp->rcv_nxt - 1 < RX_WINDOW;

	bpf_sk_release(sk);
	if (!in_window) {
		count(STAT_RX_OUT_OF_WINDOW);
		return TC_ACT_OK;
	}
	queue_notice(&ip, &th);
	return TC_ACT_OK;	/* the kernel discards it (bad checksum) */
}

/* ---- the option: sockops ---- */

static __always_inline struct pending *pending_of(struct bpf_sock_ops *skops)
{
	struct flow_key key = {};
	struct pending *p;

	skops_flow_key(skops, &key);
	p = bpf_map_lookup_elem(&csumld_pending, &key);
	return p && p->head != p->tail ? p : NULL;
}

static __always_inline void write_option(struct bpf_sock_ops *skops)
{
	__u8 opt[CSLD_LEN] = { CSLD_KIND, CSLD_LEN, CSLD_EXID_HI, CSLD_EXID_LO };
	struct pending *p = pending_of(skops);
	__be32 seq;

	if (!p)
		return;	/* taken meanwhile: the reserved bytes stay NOPs */
	seq = p->seq[p->tail % PENDING_MAX];
	__builtin_memcpy(opt + 4, &seq, 4);
	if (bpf_store_hdr_opt(skops, opt, sizeof(opt), 0) == 0) {
		p->tail++;
		count(STAT_OPTIONS_WRITTEN);
	}
}

static __always_inline void parse_option(struct bpf_sock_ops *skops)
{
	__u8 opt[CSLD_LEN] = { CSLD_KIND, 4, CSLD_EXID_HI, CSLD_EXID_LO };
	struct notice_key key = {};
	__u64 now = bpf_ktime_get_ns();
	__be32 seq_be;
	__u32 seq;

	if (bpf_load_hdr_opt(skops, opt, sizeof(opt), 0) != CSLD_LEN)
		return;
	count(STAT_OPTIONS_PARSED);
	__builtin_memcpy(&seq_be, opt + 4, 4);
	seq = bpf_ntohl(seq_be);
	/* this ACK is not processed yet: snd_una is the value before it */
	if (seq - skops->snd_una >= skops->snd_nxt - skops->snd_una) {
		count(STAT_TX_OUT_OF_WINDOW);
		return;
	}
	skops_flow_key(skops, &key.flow);
	key.seq = seq;
	if (bpf_map_update_elem(&csumld_notices, &key, &now, BPF_NOEXIST) < 0)
		count(STAT_DUPLICATE);
}

SEC("sockops")
int csumld_sockops(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		skops_all_header_options(skops);	/* either end may send data */
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		if (pending_of(skops))
			bpf_reserve_hdr_opt(skops, CSLD_LEN, 0);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		write_option(skops);
		break;
	case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:
		parse_option(skops);
		break;
	}
	return 1;
}

/* ---- the congestion control: sl_beten's (eten.bpf.c) with csumld_notices ---- */

/* Was the segment at seq notified? Consumes the notice. */
static __always_inline int notified(struct sock *sk, __u32 seq)
{
	struct notice_key key = {
		.flow = sk_flow_key(sk),
		.seq = seq,
	};

	if (!bpf_map_lookup_elem(&csumld_notices, &key))
		return 0;
	bpf_map_delete_elem(&csumld_notices, &key);
	return 1;
}

#include "notified_loss.h"

NOTIFIED_LOSS_OPS(csumld_ops, "sl_csumld");
