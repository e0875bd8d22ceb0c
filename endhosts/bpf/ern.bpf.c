// SPDX-License-Identifier: GPL-2.0-only
/*
 * sl_ern: IP-ERN end hosts (Lopez-Pacheco et al., Computer Networks 56, 2012, sections 2-3;
 * "An IP-ERN architecture to enable hybrid E2E/ERN protocol and application to satellite networking", Computer Networks 56 (2012), the CAL and its hosts), the hosts' half of the edge gateway's
 * IP-ERN XCP router (gateway/README.md "IP-ERN").
 *
 * The option is crates/packet/src/ern.rs, byte for byte: kind 254, length 20, ExID 0x4552,
 * then H_cwnd (bytes), H_rtt (us), H_feedback (bytes, i32), H_reverse_feedback (bytes, i32),
 * all big-endian.
 *
 * ern_sockops (sockops, on the host's cgroup; the same program on sender and receiver):
 *   - Negotiation: the SYN carries the option ("IP-ERN capable sender"); a listener answers
 *     with it on the SYN-ACK only when the SYN had it ("capable receiver"). The connection is
 *     E2E-ERN only when both happened; otherwise the program stops writing and parsing for it
 *     and the congestion control below is its base algorithm (silent fallback, paper 2.2.4).
 *   - Every segment of a negotiated connection carries the option: H_cwnd = the window in
 *     force, H_rtt = srtt, H_feedback = FEEDBACK_NONE ("no limit"; routers lower it),
 *     H_reverse_feedback = the echo below.
 *   - Receiver echo (paper: "copies each data packet's feedback into the ACK"): the feedback
 *     of every data segment received since this host last sent a segment is summed and
 *     written into the next one, so a delayed ACK covering two segments echoes both; a
 *     segment that no router lowered adds nothing. With nothing to echo, FEEDBACK_NONE.
 *   - Sender: each echoed value updates cwnd_ern (kept per flow in ern_flows, pinned):
 *     cwnd_ern = clamp(cwnd_ern + feedback, mss, bound); an echoed FEEDBACK_NONE on an ACK of
 *     new data (the data crossed no ERN router) sets it unlimited.
 *
 * The congestion control keeps cwnd_tcp, grown and cut by the base algorithm, and sets
 * snd_cwnd = min(cwnd_tcp, cwnd_ern) (paper Eq. 1) on every call of cong_avoid. A struct_ops
 * CC cannot wrap another one, so the base is restated here: CUBIC as Linux runs it (the
 * default, ern_config.base 0: the paper pairs ERN with the host's default CC) or NewReno
 * (base 1, keep_window.h's growth and tcp_reno_ssthresh). With no ERN router on the path,
 * sl_ern is its base.
 *
 * Open points of the paper (what the IP-ERN paper leaves unspecified), decided here:
 *   - H_cwnd carries the window in force, min(cwnd_tcp, cwnd_ern) (XCP's H_cwnd is the
 *     window the flow sends with; the router divides the positive feedback by it).
 *   - Bound on cwnd_ern: at most the window in force plus bound_packets segments
 *     (ern_config.bound_packets, default 2), applied at every echo. While TCP governs,
 *     cwnd_ern so stays just above cwnd_tcp instead of drifting to infinity (the paper's
 *     "cwnd_ern -> infinity"), and the first net negative feedback of the router puts ERN in
 *     force within an RTT; a looser bound (2 x the window was tried) lets CUBIC overflow a
 *     20-packet buffer long before the router's negative feedback unwinds the slack. While
 *     ERN governs, the bound still allows 2 segments per ACK, about slow start's pace, so it
 *     does not hold back XCP's increase after the first RTTs.
 *   - Initial feedback: the sender writes FEEDBACK_NONE, and cwnd_ern starts unlimited; the
 *     first finite echo sets cwnd_ern = (window in force) + feedback, XCP's start. A path
 *     with no ERN router therefore yields plain TCP.
 *   - cwnd_ern is never below 2 packets in the CC (one packet per RTT stalls on delayed ACKs).
 *   - cwnd_tcp keeps growing while ERN limits, as the paper's Eq. (1) implies (the flow is
 *     cwnd-limited by the window in force, so tcp_is_cwnd_limited lets it); no extra
 *     validation. Known consequence: if the ERN router disappears mid-flow, the window jumps
 *     to cwnd_tcp at once (a burst); cwnd validation would address this.
 *   - Linux writes its own options (timestamps, SACK) before the BPF ones, and the router
 *     recognises a segment as ERN only when the ERN option comes first (ern.rs). Data
 *     segments carry no kernel option when timestamps are off, so an ERN scenario sets
 *     hosts.settings.timestamps: false (satlab.scenario checks it).
 */

#include "flows.h"
#include "keep_window.h"
#define RENO_UNDO_CWND
#include "reno_steps.h"

char _license[] SEC("license") = "GPL";

#define ERN_KIND	254
#define ERN_LEN		20
#define ERN_EXID_HI	0x45
#define ERN_EXID_LO	0x52
#define FEEDBACK_NONE	0x7fffffff
#define ERN_UNLIMITED	0xffffffffU
#define TCPHDR_SYN	0x02
#define TCPHDR_ACK	0x10
#define DEFAULT_BOUND_PACKETS	2
#define MIN_ERN_PACKETS	2

/* Counter indexes of ern_stats (satlab.schemes.ERN_STATS). */
enum ern_stat {
	STAT_OPTIONS_WRITTEN,
	STAT_OPTIONS_PARSED,
	STAT_NEGOTIATED,	/* connections that became E2E-ERN (either side) */
	STAT_NOT_NEGOTIATED,	/* connections that fell back to plain TCP */
	STAT_FEEDBACK_APPLIED,	/* echoed finite feedback applied to cwnd_ern */
	STAT_FEEDBACK_NONE,	/* echoes saying no ERN router lowered the feedback */
	STAT_ERN_LIMITED,	/* cong_avoid calls where cwnd_ern < cwnd_tcp */
	STAT_TCP_LIMITED,	/* cong_avoid calls where cwnd_tcp governed */
	STAT_MAX,
};

struct ern_flow {
	__s64 echo_sum;		/* feedback of data received since this host last wrote */
	__u32 cwnd_ern;		/* bytes; ERN_UNLIMITED before the first finite echo */
	__u8 echo_pending;	/* echo_sum holds something a router wrote */
	__u8 negotiated;
	__u16 pad;
};

enum ern_base { BASE_CUBIC = 0, BASE_NEWRENO = 1 };

struct ern_config {
	__u32 bound_packets;	/* cwnd_ern <= window in force + this many MSS; 0: default 2 */
	__u32 base;		/* enum ern_base: the algorithm of cwnd_tcp */
};

PINNED_LRU_HASH(ern_flows, struct flow_key, struct ern_flow, 65536);

#define STATS_MAP ern_stats
#define CONFIG_MAP ern_config
#define CONFIG_TYPE struct ern_config
#include "scheme_maps.h"

static __always_inline __u32 bound_packets(void)
{
	__u32 zero = 0;
	struct ern_config *cfg = bpf_map_lookup_elem(&ern_config, &zero);

	return cfg && cfg->bound_packets ? cfg->bound_packets : DEFAULT_BOUND_PACKETS;
}

static __always_inline __u32 base(void)
{
	__u32 zero = 0;
	struct ern_config *cfg = bpf_map_lookup_elem(&ern_config, &zero);

	return cfg ? cfg->base : BASE_CUBIC;
}

static __always_inline __u32 be32_at(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static __always_inline void put_be32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* ---- the option: sockops ---- */

static __always_inline struct ern_flow *flow_get(const struct bpf_sock_ops *skops)
{
	struct flow_key key = {};

	skops_flow_key(skops, &key);
	return bpf_map_lookup_elem(&ern_flows, &key);
}

static __always_inline struct ern_flow *flow_create(const struct bpf_sock_ops *skops)
{
	struct ern_flow fresh = { .cwnd_ern = ERN_UNLIMITED };
	struct flow_key key = {};

	skops_flow_key(skops, &key);
	bpf_map_update_elem(&ern_flows, &key, &fresh, BPF_ANY);
	return bpf_map_lookup_elem(&ern_flows, &key);
}

/* Finds the ERN option in the segment sock_ops looks at (flags 0) or in the SYN a SYN-ACK
 * answers (BPF_LOAD_HDR_OPT_TCP_SYN); 1 when present. */
static __always_inline int load_option(struct bpf_sock_ops *skops, __u8 *opt, __u64 flags)
{
	opt[0] = ERN_KIND;
	opt[1] = 4;	/* search by kind and the 2-byte ExID */
	opt[2] = ERN_EXID_HI;
	opt[3] = ERN_EXID_LO;
	return bpf_load_hdr_opt(skops, opt, ERN_LEN, flags) == ERN_LEN;
}

static __always_inline int is_synack(const struct bpf_sock_ops *skops)
{
	return (skops->skb_tcp_flags & (TCPHDR_SYN | TCPHDR_ACK)) == (TCPHDR_SYN | TCPHDR_ACK);
}

static __always_inline void set_cb_flags(struct bpf_sock_ops *skops, int on)
{
	__u32 ours = BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG | BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG;
	__u32 flags = skops->bpf_sock_ops_cb_flags;

	bpf_sock_ops_cb_flags_set(skops, on ? flags | ours : flags & ~ours);
}

/* This host's FIN is out: the states after close() or shutdown(SHUT_WR) on our side. */
static __always_inline int fin_sent(const struct bpf_sock_ops *skops)
{
	switch (skops->state) {
	case BPF_TCP_FIN_WAIT1:
	case BPF_TCP_FIN_WAIT2:
	case BPF_TCP_CLOSING:
	case BPF_TCP_LAST_ACK:
	case BPF_TCP_TIME_WAIT:
		return 1;
	}
	return 0;
}

/* The received segment acknowledges data beyond snd_una (parsing runs before tcp_ack). Once
 * our FIN is out, an ACK may acknowledge only the FIN: a segment without payload, which no
 * router lowers (the gateway's ERN router, gateway/src/process.rs ern_segment, skips it), so
 * its FEEDBACK_NONE echo says nothing about the path; such ACKs do not count. */
static __always_inline int acks_new_data(struct bpf_sock_ops *skops)
{
	void *data = (void *)(long)skops->skb_data;
	void *end = (void *)(long)skops->skb_data_end;
	struct tcphdr *th = data;

	if ((void *)(th + 1) > end || !th->ack || fin_sent(skops))
		return 0;
	return (__s32)(bpf_ntohl(th->ack_seq) - skops->snd_una) > 0;
}

/* A data segment from the peer: add its (router-lowered) feedback to the echo. An ACK from
 * the peer: apply the feedback it echoes to cwnd_ern. Both may be in one segment. */
static __always_inline void parse_option(struct bpf_sock_ops *skops)
{
	__u8 opt[ERN_LEN] = {};
	struct ern_flow *f;
	__s32 fb, rev;

	if (!load_option(skops, opt, 0))
		return;
	count(STAT_OPTIONS_PARSED);
	f = flow_get(skops);
	if (!f || !f->negotiated)
		return;
	fb = (__s32)be32_at(&opt[12]);
	rev = (__s32)be32_at(&opt[16]);
	if (fb != FEEDBACK_NONE) {
		f->echo_sum += fb;
		f->echo_pending = 1;
	}
	if (rev == FEEDBACK_NONE) {
		/* The peer had nothing to echo: the segment acknowledges no data (a window update)
		 * or the data crossed no ERN router. Only an ACK of new data says the second (paper
		 * 2.2.4: no feedback, pure TCP). */
		if (acks_new_data(skops) && f->cwnd_ern != ERN_UNLIMITED) {
			f->cwnd_ern = ERN_UNLIMITED;
			count(STAT_FEEDBACK_NONE);
		}
		return;
	}
	{
		__u64 mss = skops->mss_cache ? skops->mss_cache : 1460;
		__u64 in_force = (__u64)skops->snd_cwnd * mss;
		__u64 bound = in_force + (__u64)bound_packets() * mss;
		__s64 w = f->cwnd_ern == ERN_UNLIMITED ? (__s64)in_force : (__s64)f->cwnd_ern;

		w += rev;
		if (w < (__s64)mss)
			w = mss;
		if (bound < mss)
			bound = mss;
		if ((__u64)w > bound)
			w = bound;
		if (w >= ERN_UNLIMITED)
			w = ERN_UNLIMITED - 1;
		f->cwnd_ern = (__u32)w;
		count(STAT_FEEDBACK_APPLIED);
	}
}

static __always_inline void write_option(struct bpf_sock_ops *skops, struct ern_flow *f)
{
	__u8 opt[ERN_LEN] = { ERN_KIND, ERN_LEN, ERN_EXID_HI, ERN_EXID_LO };
	__s32 rev = FEEDBACK_NONE;

	put_be32(&opt[4], skops->snd_cwnd * skops->mss_cache);
	put_be32(&opt[8], skops->srtt_us >> 3);
	put_be32(&opt[12], FEEDBACK_NONE);
	if (f && f->echo_pending) {
		__s64 s = f->echo_sum;

		if (s > FEEDBACK_NONE - 1)
			s = FEEDBACK_NONE - 1;
		if (s < -FEEDBACK_NONE)
			s = -FEEDBACK_NONE;
		rev = (__s32)s;
		f->echo_sum = 0;
		f->echo_pending = 0;
	}
	put_be32(&opt[16], (__u32)rev);
	if (bpf_store_hdr_opt(skops, opt, sizeof(opt), 0) == 0)
		count(STAT_OPTIONS_WRITTEN);
}

/* The handshake's two answers: the active side reads the SYN-ACK, the passive side the SYN. */
static __always_inline void established(struct bpf_sock_ops *skops, int active)
{
	__u8 opt[ERN_LEN] = {};
	struct ern_flow *f;
	int ok;

	if (active) {
		ok = load_option(skops, opt, 0);	/* the SYN-ACK */
		f = ok ? flow_create(skops) : NULL;
		if (f)
			f->negotiated = 1;
	} else {
		f = flow_get(skops);	/* made when the SYN-ACK answered an ERN SYN */
		ok = f && f->negotiated;
	}
	count(ok ? STAT_NEGOTIATED : STAT_NOT_NEGOTIATED);
	set_cb_flags(skops, ok);
}

SEC("sockops")
int ern_sockops(struct bpf_sock_ops *skops)
{
	__u8 syn_opt[ERN_LEN] = {};
	struct ern_flow *f;

	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		/* the SYN (active) or SYN-ACK (passive, inherited by the request) gets the option */
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
					  BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		established(skops, 1);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		established(skops, 0);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		if (is_synack(skops) && !load_option(skops, syn_opt, BPF_LOAD_HDR_OPT_TCP_SYN))
			break;	/* a SYN without the option: answer like a plain host */
		bpf_reserve_hdr_opt(skops, ERN_LEN, 0);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		if (is_synack(skops)) {
			if (!load_option(skops, syn_opt, BPF_LOAD_HDR_OPT_TCP_SYN))
				break;
			f = flow_create(skops);	/* the child socket finds it established */
			if (f)
				f->negotiated = 1;
			write_option(skops, NULL);
			break;
		}
		write_option(skops, flow_get(skops));
		break;
	case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:
		parse_option(skops);
		break;
	}
	return 1;
}

/* ---- cwnd_tcp: CUBIC as Linux runs it (net/ipv4/tcp_cubic.c, RFC 9438) ---- */
/*
 * The kernel's CUBIC with its default module parameters, written out here because a struct_ops
 * congestion control cannot call another one: beta 717/1024, C = 0.4 (bic_scale 41), fast
 * convergence, TCP friendliness, growth capped at 1.5x per RTT (cnt >= 2) and at 5 % per RTT
 * before the first loss (cnt <= 20), HyStart with ack-train and delay detection from 16 packets.
 * Times are microseconds from tp->tcp_mstamp (the kernel counts the epoch in jiffies); the
 * shift of the epoch after an idle period (CA_EVENT_TX_START) is not restated: bulk senders
 * are never idle.
 */

#define CUBIC_BETA		717U	/* / 1024 */
#define CUBIC_SCALE_RTT		410ULL	/* bic_scale 41 x 10: C = 0.4, time in 2^-10 s */
#define CUBIC_FRIENDLY_SCALE	15U	/* 8 (1024 + beta) / 3 / (1024 - beta) */
#define CUBIC_UPDATE_US		31250U	/* HZ / 32: the window is recomputed at most this often */
#define HYSTART_LOW_WINDOW	16U
#define HYSTART_MIN_SAMPLES	8
#define HYSTART_ACK_DELTA_US	2000U
#define HYSTART_DELAY_MIN_US	4000U
#define HYSTART_DELAY_MAX_US	16000U
#define USEC_PER_SEC		1000000ULL

struct cubic {
	__u32 cnt;		/* ACKs per one-packet increase */
	__u32 w_max;		/* window before the last reduction */
	__u32 last_cwnd;
	__u32 last_time;	/* us */
	__u32 origin;		/* window at the plateau of the cubic */
	__u32 k;		/* time to the plateau from the epoch start, 2^-10 s */
	__u32 delay_min;	/* us */
	__u32 epoch_start;	/* us; 0: no epoch */
	__u32 ack_cnt;
	__u32 tcp_cwnd;		/* what Reno would have (TCP friendliness) */
	__u32 round_start;	/* HyStart: this round's start (us), end sequence, last ACK */
	__u32 end_seq;
	__u32 last_ack;
	__u32 curr_rtt;
	__u8 sample_cnt;
	__u8 found;		/* HyStart left slow start */
};

static __always_inline __u32 now_us(const struct tcp_sock *tp)
{
	return (__u32)tp->tcp_mstamp;
}

/* Index of the highest bit set, 1-based (0 for 0). */
static __always_inline __u32 fls64_(__u64 x)
{
	__u32 n = 0;

	if (x >> 32) { n += 32; x >>= 32; }
	if (x >> 16) { n += 16; x >>= 16; }
	if (x >> 8) { n += 8; x >>= 8; }
	if (x >> 4) { n += 4; x >>= 4; }
	if (x >> 2) { n += 2; x >>= 2; }
	if (x >> 1) { n += 1; x >>= 1; }
	return n + (__u32)x;
}

/* floor(cbrt(a)) by Newton's method from a power of two above the root. */
static __always_inline __u32 cube_root(__u64 a)
{
	__u64 x, next;
	int i;

	if (a < 2)
		return a;
	x = 1ULL << ((fls64_(a) + 2) / 3);
	for (i = 0; i < 12; i++) {
		next = (2 * x + a / (x * x)) / 3;
		if (next >= x)
			break;
		x = next;
	}
	return x;
}

static __always_inline void cubic_reset(struct cubic *c)
{
	c->cnt = 0;
	c->w_max = 0;
	c->last_cwnd = 0;
	c->last_time = 0;
	c->origin = 0;
	c->k = 0;
	c->delay_min = 0;
	c->epoch_start = 0;
	c->ack_cnt = 0;
	c->tcp_cwnd = 0;
	c->found = 0;
}

static __always_inline void hystart_round(struct cubic *c, const struct tcp_sock *tp)
{
	c->round_start = c->last_ack = now_us(tp);
	c->end_seq = tp->snd_nxt;
	c->curr_rtt = ~0U;
	c->sample_cnt = 0;
}

/* bictcp_update(): the ACK count per increase that follows the cubic (or Reno, if faster). */
static __always_inline void cubic_update(struct cubic *c, __u32 cwnd, __u32 acked, __u32 now)
{
	__u64 t, offs, delta;
	__u32 target, d;

	c->ack_cnt += acked;
	if (c->last_cwnd == cwnd && (__s32)(now - c->last_time) <= (__s32)CUBIC_UPDATE_US)
		return;
	c->last_cwnd = cwnd;
	c->last_time = now;
	if (!c->epoch_start) {
		c->epoch_start = now ? now : 1;
		c->ack_cnt = acked;
		c->tcp_cwnd = cwnd;
		if (c->w_max <= cwnd) {
			c->k = 0;
			c->origin = cwnd;
		} else {
			/* K = cbrt((w_max - cwnd) / C), in 2^-10 s */
			c->k = cube_root((1ULL << 40) / CUBIC_SCALE_RTT * (c->w_max - cwnd));
			c->origin = c->w_max;
		}
	}
	t = ((__u64)(__u32)(now - c->epoch_start) + c->delay_min) << 10;
	t /= USEC_PER_SEC;
	offs = t < c->k ? c->k - t : t - c->k;
	delta = (CUBIC_SCALE_RTT * offs * offs * offs) >> 40;
	target = t < c->k ? c->origin - (__u32)delta : c->origin + (__u32)delta;
	c->cnt = target > cwnd ? cwnd / (target - cwnd) : 100 * cwnd;
	if (c->w_max == 0 && c->cnt > 20)
		c->cnt = 20;

	d = (cwnd * CUBIC_FRIENDLY_SCALE) >> 3;
	if (d && c->ack_cnt > d) {
		__u32 n = c->ack_cnt / d;

		c->ack_cnt -= n * d;
		c->tcp_cwnd += n;
	}
	if (c->tcp_cwnd > cwnd) {
		__u32 max_cnt = cwnd / (c->tcp_cwnd - cwnd);

		if (c->cnt > max_cnt)
			c->cnt = max_cnt;
	}
	c->cnt = sl_max(c->cnt, 2U);
}

/* tcp_cubic's cong_avoid on tp->snd_cwnd (set to cwnd_tcp by the caller). */
static __always_inline void cubic_cong_avoid(struct sock *sk, struct cubic *c, __u32 ack,
					     __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!sl_tcp_is_cwnd_limited(sk))
		return;
	if (sl_tcp_in_slow_start(tp)) {
		if ((__s32)(ack - c->end_seq) > 0)
			hystart_round(c, tp);
		acked = sl_tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	cubic_update(c, tp->snd_cwnd, acked, now_us(tp));
	sl_tcp_cong_avoid_ai(tp, c->cnt, acked);
}

/* bictcp_recalc_ssthresh(): remember w_max (lower with fast convergence), cut by beta. */
static __always_inline __u32 cubic_ssthresh(struct cubic *c, __u32 cwnd)
{
	c->epoch_start = 0;
	if (cwnd < c->w_max)
		c->w_max = cwnd * (1024 + CUBIC_BETA) / 2048;
	else
		c->w_max = cwnd;
	return sl_max(cwnd * CUBIC_BETA / 1024, 2U);
}

/* HyStart: leave slow start when ACK trains stretch to half the minimum RTT or the RTT of a
 * round rises by clamp(delay_min / 8, 4 ms, 16 ms). `cwnd` is cwnd_tcp. */
static __always_inline void hystart_sample(struct sock *sk, struct cubic *c, __u32 delay,
					   __u32 cwnd)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 now = now_us(tp), threshold, margin;

	if ((__s32)(now - c->last_ack) <= (__s32)HYSTART_ACK_DELTA_US) {
		__u64 rate = sk->sk_pacing_rate;
		__u32 ack_delay = rate ? (__u32)sl_min(1000ULL, 65536ULL * 4 * USEC_PER_SEC / rate)
				       : 0;

		c->last_ack = now;
		threshold = c->delay_min + ack_delay;
		if (sk->sk_pacing_status == SK_PACING_NONE)
			threshold >>= 1;
		if ((__s32)(now - c->round_start) > (__s32)threshold) {
			c->found = 1;
			tp->snd_ssthresh = cwnd;
		}
	}
	if (c->curr_rtt > delay)
		c->curr_rtt = delay;
	if (c->sample_cnt < HYSTART_MIN_SAMPLES) {
		c->sample_cnt++;
		return;
	}
	margin = sl_min(sl_max(c->delay_min >> 3, HYSTART_DELAY_MIN_US), HYSTART_DELAY_MAX_US);
	if (c->curr_rtt > c->delay_min + margin) {
		c->found = 1;
		tp->snd_ssthresh = cwnd;
	}
}

/* ---- the congestion control: min(cwnd_tcp, cwnd_ern) ---- */

struct ern_ca {
	__u32 cwnd_tcp;		/* the base algorithm's window, packets */
	__u32 last_set;		/* snd_cwnd as this CC last left it */
	struct cubic cubic;
};

/* cwnd_ern of the socket's flow in packets (at least MIN_ERN_PACKETS); ERN_UNLIMITED when the
 * connection is not E2E-ERN or no finite feedback came yet. */
static __always_inline __u32 ern_window(struct sock *sk, const struct tcp_sock *tp)
{
	struct flow_key key = sk_flow_key(sk);
	struct ern_flow *f = bpf_map_lookup_elem(&ern_flows, &key);
	__u32 mss = tp->mss_cache ? tp->mss_cache : 1;

	if (!f || !f->negotiated || f->cwnd_ern == ERN_UNLIMITED)
		return ERN_UNLIMITED;
	return sl_max(f->cwnd_ern / mss, (__u32)MIN_ERN_PACKETS);
}

/* The TCP window: ours, unless the kernel moved snd_cwnd since (recovery, timeout, undo). */
static __always_inline __u32 tcp_window(struct ern_ca *ca, const struct tcp_sock *tp)
{
	return tp->snd_cwnd == ca->last_set ? ca->cwnd_tcp : tp->snd_cwnd;
}

SEC("struct_ops/ern_init")
void BPF_PROG(ern_init, struct sock *sk)
{
	struct ern_ca *ca = inet_csk_ca(sk);
	const struct tcp_sock *tp = tcp_sk(sk);

	ca->cwnd_tcp = tp->snd_cwnd;
	ca->last_set = tp->snd_cwnd;
	cubic_reset(&ca->cubic);
	hystart_round(&ca->cubic, tp);
}

/* The base algorithm's loss response on cwnd_tcp, whatever window was in force. */
SEC("struct_ops/ern_ssthresh")
__u32 BPF_PROG(ern_ssthresh, struct sock *sk)
{
	struct ern_ca *ca = inet_csk_ca(sk);
	__u32 cwnd = tcp_window(ca, tcp_sk(sk));

	if (base() == BASE_NEWRENO)
		return sl_max(cwnd >> 1U, 2U);	/* tcp_reno_ssthresh */
	return cubic_ssthresh(&ca->cubic, cwnd);
}

/* Eq. (1): the base algorithm grows cwnd_tcp, then snd_cwnd = min(cwnd_tcp, cwnd_ern). */
SEC("struct_ops/ern_cong_avoid")
void BPF_PROG(ern_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct ern_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 ern;

	tp->snd_cwnd = tcp_window(ca, tp);
	if (base() == BASE_NEWRENO)
		sl_tcp_reno_cong_avoid(sk, acked);
	else
		cubic_cong_avoid(sk, &ca->cubic, ack, acked);
	ca->cwnd_tcp = tp->snd_cwnd;
	ern = ern_window(sk, tp);
	if (ern < tp->snd_cwnd) {
		tp->snd_cwnd = ern;
		count(STAT_ERN_LIMITED);
	} else {
		count(STAT_TCP_LIMITED);
	}
	ca->last_set = tp->snd_cwnd;
}

/* bictcp_state(): a timeout starts CUBIC afresh. */
SEC("struct_ops/ern_set_state")
void BPF_PROG(ern_set_state, struct sock *sk, __u8 new_state)
{
	struct ern_ca *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		cubic_reset(&ca->cubic);
		hystart_round(&ca->cubic, tcp_sk(sk));
	}
}

/* bictcp_acked(): RTT samples for the cubic's delay_min and HyStart. */
SEC("struct_ops/ern_pkts_acked")
void BPF_PROG(ern_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct ern_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct cubic *c = &ca->cubic;
	__u32 delay, cwnd;

	if (base() == BASE_NEWRENO || sample->rtt_us < 0)
		return;
	/* no delay samples in the second after a reduction */
	if (c->epoch_start && (__s32)(now_us(tp) - c->epoch_start) < (__s32)USEC_PER_SEC)
		return;
	delay = sample->rtt_us ? sample->rtt_us : 1;
	if (c->delay_min == 0 || c->delay_min > delay)
		c->delay_min = delay;
	cwnd = tcp_window(ca, tp);
	if (!c->found && cwnd < tp->snd_ssthresh && cwnd >= HYSTART_LOW_WINDOW)
		hystart_sample(sk, c, delay, cwnd);
}

/* .name is a placeholder: the loader registers one instance per host under its own name. */
SEC(".struct_ops")
struct tcp_congestion_ops sl_ern = {
	.init		= (void *)ern_init,
	.ssthresh	= (void *)ern_ssthresh,
	.cong_avoid	= (void *)ern_cong_avoid,
	.set_state	= (void *)ern_set_state,
	.pkts_acked	= (void *)ern_pkts_acked,
	.undo_cwnd	= (void *)reno_undo_cwnd,
	.name		= "sl_ern",
};
