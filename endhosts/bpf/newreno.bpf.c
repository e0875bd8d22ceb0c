// SPDX-License-Identifier: GPL-2.0-only
/*
 * sl_newreno: SatLab's reference NewReno/SACK congestion control.
 *
 * The baseline every loss-differentiation scheme of the project is measured against and
 * built from. Its response to a loss is exactly the kernel's tcp_reno (net/ipv4/tcp_cong.c):
 *
 *   RFC 5681 (TCP congestion control):
 *     slow start           cwnd += packets ACKed, while cwnd < ssthresh        (sec. 3.1)
 *     congestion avoidance cwnd += 1 per cwnd packets ACKed                    (sec. 3.1)
 *     on loss              ssthresh = max(cwnd / 2, 2)                         (sec. 3.1, eq. 4)
 *   RFC 6582 (NewReno fast recovery: partial ACKs keep the sender in recovery until
 *   everything outstanding at the loss is ACKed), with SACK-based loss recovery
 *   (RFC 6675, RACK-TLP RFC 8985) as the kernel does it.
 *
 * Like tcp_reno, Linux halves cwnd rather than RFC 5681's FlightSize, and the kernel, not
 * this program, runs fast retransmit, recovery and the reduction towards ssthresh
 * (PRR, RFC 6937); a tcp_congestion_ops only decides how the window grows and where a
 * loss sets ssthresh. A spurious reduction detected by the kernel (DSACK, timestamps) is
 * undone to the window before the loss.
 *
 * A scheme (bpf/<scheme>.bpf.c) differs from this file only in how it classifies a loss:
 * a loss the scheme attributes to corruption on the satellite link rather than to
 * congestion gets a different ssthresh (and, where the scheme needs it, different
 * undo); window growth stays the arithmetic of tcp_ca_helpers.h. Comparing a scheme
 * with sl_newreno therefore isolates the effect of its loss classification.
 *
 * Structure after the kernel BPF selftests progs/bpf_cubic.c and progs/bpf_dctcp.c.
 */

#define RENO_SSTHRESH
#define RENO_CONG_AVOID
#define RENO_UNDO_CWND
#include "reno_steps.h"

char _license[] SEC("license") = "GPL";

/*
 * The struct_ops map. Its variable name is the map name bpftool shows and unregisters
 * by; .name is what TCP_CONGESTION and net.ipv4.tcp_congestion_control select.
 */
SEC(".struct_ops")
struct tcp_congestion_ops sl_newreno = {
	.ssthresh	= (void *)reno_ssthresh,
	.cong_avoid	= (void *)reno_cong_avoid,
	.undo_cwnd	= (void *)reno_undo_cwnd,
	.name		= "sl_newreno",
};
