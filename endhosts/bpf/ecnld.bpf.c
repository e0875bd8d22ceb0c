// SPDX-License-Identifier: GPL-2.0-only
/*
 * sl_ecnld: the ECN-based error discriminator at the TCP sender ("TCP-ECN"; the ECN-based
 * error discriminator paper, its abstract and Tables 2/3).
 *
 * RED at the bottleneck (the edge gateway, aqm kind red_ecn) marks instead of dropping; the
 * receiver echoes CE as ECE (standard RFC 3168 ECN: hosts.settings.ecn "on"). Only the sender
 * differs from NewReno (newreno.bpf.c), in how it classifies a loss the kernel detects from
 * duplicate ACKs/SACKs (the TCP-ECN paper, section 3, Tables 1-3):
 *   - an ECE on one of the last K ACKs (ecnld_config.k, default 2: the paper's "normally two
 *     previous marked packets is enough") -> congestion: NewReno's halving;
 *   - none -> wireless: retransmit, reset the timer, no cwnd/ssthresh change
 *     (keep_window.h's loss response).
 * A new ACK with ECE reduces the rate as standard ECN does: the kernel enters CWR and asks this
 * program for ssthresh(), which sees the ECE on the current ACK (in_ack_event runs before the
 * kernel's loss/ECE processing of the same ACK), so it halves. A retransmission timeout is plain
 * Reno (C1: "RTO -> plain Reno (no ACKs, so nothing to classify on)").
 *
 * The ACK history is a bit per ACK, newest in bit 0 (in_ack_event, flag CA_ACK_ECE), so "an ECE
 * within the last K ACKs" is one mask test; K is at most 32.
 *
 * "Reset the timer", in Linux: the kernel re-arms the retransmission timer (a full RTO from now,
 * without back-off) whenever it retransmits the head of the queue during recovery
 * (tcp_xmit_retransmit_queue -> tcp_reset_xmit_timer), and again on every ACK that advances
 * snd_una (tcp_rearm_rto). A congestion control cannot touch the timer (no kfunc), and need not:
 * the wireless fast retransmit re-arms it exactly as the paper's reset does. Our choice: keep the
 * kernel's re-arm; the RTO value itself (srtt + 4 rttvar) is not changed.
 *
 * "NewReno-style recovery of several losses" (C1: stay in recovery until all data outstanding at
 * the loss is ACKed, one retransmission per hole before an RTO): the kernel's recovery does that
 * (SACK-based, RFC 6675/RACK, or RFC 6582 NewReno partial ACKs when SACK is off), and calls
 * ssthresh() once per episode, so an episode is classified by its first loss.
 *
 * Congestion takes priority (C1): an ECE arriving while a wireless episode is still in recovery
 * withdraws the "keep": ssthresh becomes half the pre-loss window, so the end of recovery leaves
 * the halved window (counted as reclassified). The kernel would not start a CWR for that ECE by
 * itself, as it is already reducing (tcp_in_cwnd_reduction).
 */

#include "keep_window.h"
#define RENO_CONG_AVOID
#include "reno_steps.h"

char _license[] SEC("license") = "GPL";

#define ECNLD_K_DEFAULT	2
#define ECNLD_K_MAX	32

/* Counter indexes of ecnld_stats (satlab.schemes.ECNLD_STATS). */
enum ecnld_stat {
	STAT_ACKS,			/* ACKs seen (in_ack_event) */
	STAT_ACKS_ECE,			/* ... of which carried ECE */
	STAT_CWR_ECE,			/* ECE reductions without a loss (the kernel's CWR) */
	STAT_LOSS_CONGESTION,		/* dupack loss episodes with an ECE in the last K ACKs, or
					 * starting during an ECE reduction: halved */
	STAT_LOSS_WIRELESS,		/* dupack loss episodes without: window kept */
	STAT_RECLASSIFIED,		/* wireless episodes turned congestion by a later ECE */
	STAT_TIMEOUTS,			/* retransmission timeouts: plain Reno */
	STAT_MAX,
};

/* What the last ssthresh() decided, counted once set_state() tells what the call was for. */
enum ecnld_class { CLASS_NONE, CLASS_CONGESTION, CLASS_WIRELESS };

struct ecnld_config {
	__u32 k;			/* look-back in ACKs; 0: the default (2) */
};

#define STATS_MAP ecnld_stats
#define CONFIG_MAP ecnld_config
#define CONFIG_TYPE struct ecnld_config
#include "scheme_maps.h"

struct ecnld_ca {
	struct keep_window kw;
	__u32 ece_hist;		/* bit i: the ACK i ACKs ago carried ECE */
	__u32 prior_cwnd;	/* cwnd when the current episode began */
	__u8 decided;		/* enum ecnld_class of the last ssthresh(), not yet counted */
};

static __always_inline __u32 k_mask(void)
{
	__u32 zero = 0, k = ECNLD_K_DEFAULT;
	struct ecnld_config *cfg = bpf_map_lookup_elem(&ecnld_config, &zero);

	if (cfg && cfg->k)
		k = cfg->k;
	if (k >= ECNLD_K_MAX)
		return ~0U;
	return (1U << k) - 1;
}

SEC("struct_ops/ecnld_init")
void BPF_PROG(ecnld_init, struct sock *sk)
{
	struct ecnld_ca *ca = inet_csk_ca(sk);

	kw_init(&ca->kw);
	ca->ece_hist = 0;
	ca->prior_cwnd = 0;
	ca->decided = CLASS_NONE;
}

SEC("struct_ops/ecnld_in_ack_event")
void BPF_PROG(ecnld_in_ack_event, struct sock *sk, __u32 flags)
{
	struct ecnld_ca *ca = inet_csk_ca(sk);
	__u32 ece = !!(flags & CA_ACK_ECE);

	ca->ece_hist = ca->ece_hist << 1 | ece;
	count(STAT_ACKS);
	if (!ece)
		return;
	count(STAT_ACKS_ECE);
	/* congestion takes priority: withdraw the keep of a wireless episode still in recovery */
	if (ca->kw.corruption && inet_csk(sk)->icsk_ca_state == TCP_CA_Recovery) {
		tcp_sk(sk)->snd_ssthresh = sl_max(ca->prior_cwnd >> 1U, 2U);
		ca->kw.corruption = 0;
		count(STAT_RECLASSIFIED);
	}
}

SEC("struct_ops/ecnld_ssthresh")
__u32 BPF_PROG(ecnld_ssthresh, struct sock *sk)
{
	struct ecnld_ca *ca = inet_csk_ca(sk);
	const struct tcp_sock *tp = tcp_sk(sk);

	ca->prior_cwnd = tp->snd_cwnd;
	if (ca->ece_hist & k_mask()) {
		ca->decided = CLASS_CONGESTION;
		return kw_congestion_ssthresh(&ca->kw, tp);
	}
	ca->decided = CLASS_WIRELESS;
	return kw_corruption_ssthresh(&ca->kw, tp);
}

SEC("struct_ops/ecnld_cwnd_event")
void BPF_PROG(ecnld_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (kw_recovery_complete(ev))
		kw_restore(&((struct ecnld_ca *)inet_csk_ca(sk))->kw, tcp_sk(sk));
}

SEC("struct_ops/ecnld_set_state")
void BPF_PROG(ecnld_set_state, struct sock *sk, __u8 new_state)
{
	struct ecnld_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u8 decided = ca->decided;

	ca->decided = CLASS_NONE;
	if (new_state == TCP_CA_CWR && decided == CLASS_CONGESTION)
		count(STAT_CWR_ECE);
	/* A loss found during an ECE reduction starts no ssthresh(): the window is already cut. */
	if (new_state == TCP_CA_Recovery)
		count(decided == CLASS_WIRELESS ? STAT_LOSS_WIRELESS : STAT_LOSS_CONGESTION);
	if (new_state == TCP_CA_Loss) {
		/* A timeout: plain Reno, whatever an earlier fast-retransmit episode decided.
		 * tcp_enter_loss saved the pre-timeout window in prior_cwnd (or kept the one of the
		 * recovery it interrupts) just before this call; a repeated timeout sees the same. */
		if (inet_csk(sk)->icsk_ca_state != TCP_CA_Loss)
			count(STAT_TIMEOUTS);
		tp->snd_ssthresh = sl_max(tp->prior_cwnd >> 1U, 2U);
		ca->kw.corruption = 0;
		return;
	}
	if (kw_loss_over(sk, new_state))
		kw_restore(&ca->kw, tp);
}

SEC("struct_ops/ecnld_undo_cwnd")
__u32 BPF_PROG(ecnld_undo_cwnd, struct sock *sk)
{
	((struct ecnld_ca *)inet_csk_ca(sk))->kw.corruption = 0;
	return sl_tcp_reno_undo_cwnd(sk);
}

/* .name is a placeholder: the loader registers one instance per host under its own name. */
SEC(".struct_ops")
struct tcp_congestion_ops ecnld_ops = {
	.init		= (void *)ecnld_init,
	.ssthresh	= (void *)ecnld_ssthresh,
	.cong_avoid	= (void *)reno_cong_avoid,
	.cwnd_event	= (void *)ecnld_cwnd_event,
	.in_ack_event	= (void *)ecnld_in_ack_event,
	.set_state	= (void *)ecnld_set_state,
	.undo_cwnd	= (void *)ecnld_undo_cwnd,
	.name		= "sl_ecnld",
};
