// SPDX-License-Identifier: GPL-2.0-only
/*
 * sl_ceten / sl_ceten_lf: cumulative ETEN senders (ETEN report section 4;
 * CETEN, in "Explicit Transport Error Notification (ETEN) for Error-Prone Wireless and Satellite Networks", BBN TR 8333).
 *
 * The path's corruption and congestion survival probabilities travel in the CETEN TCP
 * option (crates/packet/src/ceten.rs: kind 254, ExID 0x4345, four 16-bit fixed-point
 * probabilities, 0xffff = 1.0):
 *   - ceten_sockops (sockops, attached to the sending host's cgroup) writes the option on
 *     every segment this host sends, forward fields 1.0 (the report: "the source sets
 *     forward = 1"), so each CETEN router on the way multiplies in its link's estimates;
 *     its reverse fields carry the forward values this host last received, which is the
 *     receiver's part of the report (copy forward into reverse), for a peer that asks.
 *   - It parses the option on every segment received and keeps, per connection, the
 *     reverse fields: what this host's own segments saw on the path, reflected by the
 *     receiver or, for a receiver without CETEN, by its satellite edge
 *     (gateway ceten.reflect).
 *   - The congestion control, on each loss the kernel detects (one ssthresh() call per
 *     recovery episode, or a timeout), draws: congestion with probability
 *     p_cong / (p_cong + p_corr), as printed in the report (sl_ceten); or, as a labelled
 *     variant, with the loss-fraction form (1 - p_cong) / ((1 - p_cong) + (1 - p_corr))
 *     (sl_ceten_lf; our reading of report section 4.3: with survival probabilities near 1 the printed form calls
 *     about half of all losses corruption whatever their cause). Congestion: NewReno's
 *     halving; corruption: retransmit only (keep_window.h). With no estimate yet for the
 *     connection, a loss is congestion.
 *
 * The variant is ceten_config.variant (0 printed, 1 loss fraction), set by the loader.
 */

#include "flows.h"
#include "keep_window.h"
#define RENO_CONG_AVOID
#include "reno_steps.h"

char _license[] SEC("license") = "GPL";

#define CETEN_KIND	254
#define CETEN_LEN	12
#define CETEN_EXID_HI	0x43
#define CETEN_EXID_LO	0x45
#define Q16_ONE		0xffff

enum ceten_variant { VARIANT_PRINTED = 0, VARIANT_LOSS_FRACTION = 1 };

/* Counter indexes of ceten_stats (satlab.schemes.CETEN_STATS). */
enum ceten_stat {
	STAT_OPTIONS_WRITTEN,
	STAT_OPTIONS_PARSED,		/* received segments that carried the option */
	STAT_LOSS_CORRUPTION,
	STAT_LOSS_CONGESTION,
	STAT_LOSS_NO_ESTIMATE,		/* of the congestion ones: no reflected values yet */
	STAT_MAX,
};

struct path_estimate {
	__u16 rev_corr;		/* survival of this host's segments on the path (reflected) */
	__u16 rev_cong;
	__u16 fwd_corr;		/* survival of the peer's segments: what this host reflects */
	__u16 fwd_cong;
	__u8 have_rev;		/* the reverse fields came from somebody (not our own 0) */
	__u8 have_fwd;
	__u16 pad;
};

struct ceten_config {
	__u32 variant;
};

PINNED_LRU_HASH(ceten_paths, struct flow_key, struct path_estimate, 65536);

#define STATS_MAP ceten_stats
#define CONFIG_MAP ceten_config
#define CONFIG_TYPE struct ceten_config
#include "scheme_maps.h"

/* ---- the option: sockops ---- */

static __always_inline void parse_option(struct bpf_sock_ops *skops)
{
	__u8 opt[CETEN_LEN] = { CETEN_KIND, 4, CETEN_EXID_HI, CETEN_EXID_LO };
	struct path_estimate fresh = {}, *pe;
	struct flow_key key = {};

	if (bpf_load_hdr_opt(skops, opt, sizeof(opt), 0) != CETEN_LEN)
		return;
	count(STAT_OPTIONS_PARSED);
	skops_flow_key(skops, &key);
	pe = map_lookup_or_init(&ceten_paths, &key, &fresh);
	if (!pe)
		return;
	pe->fwd_corr = (__u16)opt[4] << 8 | opt[5];
	pe->fwd_cong = (__u16)opt[6] << 8 | opt[7];
	pe->have_fwd = 1;
	/* A sender without a reflecting peer sees zeros here: no estimate rather than 0. */
	if (opt[8] | opt[9] | opt[10] | opt[11]) {
		pe->rev_corr = (__u16)opt[8] << 8 | opt[9];
		pe->rev_cong = (__u16)opt[10] << 8 | opt[11];
		pe->have_rev = 1;
	}
}

static __always_inline void write_option(struct bpf_sock_ops *skops)
{
	__u8 opt[CETEN_LEN] = { CETEN_KIND, CETEN_LEN, CETEN_EXID_HI, CETEN_EXID_LO,
				0xff, 0xff, 0xff, 0xff };
	struct flow_key key = {};
	struct path_estimate *pe;

	skops_flow_key(skops, &key);
	pe = bpf_map_lookup_elem(&ceten_paths, &key);
	if (pe && pe->have_fwd) {
		opt[8] = pe->fwd_corr >> 8;
		opt[9] = pe->fwd_corr;
		opt[10] = pe->fwd_cong >> 8;
		opt[11] = pe->fwd_cong;
	}
	if (bpf_store_hdr_opt(skops, opt, sizeof(opt), 0) == 0)
		count(STAT_OPTIONS_WRITTEN);
}

SEC("sockops")
int ceten_sockops(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		skops_all_header_options(skops);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		bpf_reserve_hdr_opt(skops, CETEN_LEN, 0);
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

/* ---- the congestion control ---- */

struct ceten_ca {
	struct keep_window kw;
};

/* 1: treat this loss as congestion. Random draw against the path's survival values. */
static __always_inline int draw_congestion(struct sock *sk)
{
	struct flow_key key = sk_flow_key(sk);
	struct path_estimate *pe = bpf_map_lookup_elem(&ceten_paths, &key);
	__u32 zero = 0, cong, corr;
	struct ceten_config *cfg = bpf_map_lookup_elem(&ceten_config, &zero);

	if (!pe || !pe->have_rev) {
		count(STAT_LOSS_NO_ESTIMATE);
		return 1;
	}
	cong = pe->rev_cong;
	corr = pe->rev_corr;
	if (cfg && cfg->variant == VARIANT_LOSS_FRACTION) {
		cong = Q16_ONE - cong;	/* 1 - p: how often each cause loses a packet */
		corr = Q16_ONE - corr;
	}
	/*
	 * The values are those of the ACK that starts recovery, which answers the third segment
	 * after the lost one (RACK / three SACKed segments): with the report's alpha of 0.5 the
	 * edge stamps segment j after a lost packet with 1 - 2^-j, so that ACK reads 0.875 (less
	 * after a burst); segments from the 17th on read 1.0 (0xffff) again. A loss found later
	 * (an RTO) sees 1.0 for both causes and takes the standard response below.
	 */
	if (cong + corr == 0)
		return 1;	/* no evidence of either cause: the standard response */
	return bpf_get_prandom_u32() % (cong + corr) < cong;
}

SEC("struct_ops/ceten_init")
void BPF_PROG(ceten_init, struct sock *sk)
{
	struct ceten_ca *ca = inet_csk_ca(sk);

	kw_init(&ca->kw);
}

SEC("struct_ops/ceten_ssthresh")
__u32 BPF_PROG(ceten_ssthresh, struct sock *sk)
{
	struct ceten_ca *ca = inet_csk_ca(sk);
	const struct tcp_sock *tp = tcp_sk(sk);

	if (draw_congestion(sk)) {
		count(STAT_LOSS_CONGESTION);
		return kw_congestion_ssthresh(&ca->kw, tp);
	}
	count(STAT_LOSS_CORRUPTION);
	return kw_corruption_ssthresh(&ca->kw, tp);
}

SEC("struct_ops/ceten_cwnd_event")
void BPF_PROG(ceten_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (kw_recovery_complete(ev))
		kw_restore(&((struct ceten_ca *)inet_csk_ca(sk))->kw, tcp_sk(sk));
}

SEC("struct_ops/ceten_set_state")
void BPF_PROG(ceten_set_state, struct sock *sk, __u8 new_state)
{
	if (kw_loss_over(sk, new_state))
		kw_restore(&((struct ceten_ca *)inet_csk_ca(sk))->kw, tcp_sk(sk));
}

SEC("struct_ops/ceten_undo_cwnd")
__u32 BPF_PROG(ceten_undo_cwnd, struct sock *sk)
{
	((struct ceten_ca *)inet_csk_ca(sk))->kw.corruption = 0;
	return sl_tcp_reno_undo_cwnd(sk);
}

/* .name is a placeholder: the loader registers one instance per host under its own name. */
SEC(".struct_ops")
struct tcp_congestion_ops ceten_ops = {
	.init		= (void *)ceten_init,
	.ssthresh	= (void *)ceten_ssthresh,
	.cong_avoid	= (void *)reno_cong_avoid,
	.cwnd_event	= (void *)ceten_cwnd_event,
	.set_state	= (void *)ceten_set_state,
	.undo_cwnd	= (void *)ceten_undo_cwnd,
	.name		= "sl_ceten",
};
