// SPDX-License-Identifier: (GPL-2.0-only OR MIT)
/*
 * xsk_redirect.bpf.c — the XDP program in front of each AF_XDP port of ccarena-link
 * (crates/link/src/shell/xsk, docs/link.md). Built and embedded by crates/link/build.rs.
 *
 * For every frame arriving on the interface it
 *   1. makes room for 8 bytes of metadata in front of the frame (bpf_xdp_adjust_meta)
 *      and writes the arrival time there: bpf_ktime_get_ns(), CLOCK_MONOTONIC, the
 *      clock of the link's core. In copy mode the metadata is copied into the UMEM chunk
 *      with the frame, right in front of it, where user space reads (and clears) it.
 *      Without room (the driver gave no headroom) the frame goes unstamped: user space
 *      then stamps it on receipt;
 *   2. redirects the frame to the AF_XDP socket of its receive queue through the XSKMAP
 *      `cca_xsk_map` (user space puts its one socket at key 0: the port binds queue 0);
 *      a queue without a socket passes the frame to the stack (XDP_PASS).
 *
 * The program is named cca_xsk: the leak checks (tests/conftest.py) and `bpftool prog`
 * know the link's programs by it. It is attached with a bpf_link, which detaches when
 * the link process exits, however it exits.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "Dual MIT/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cca_xsk_map SEC(".maps");

SEC("xdp")
int cca_xsk(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(__u64)) == 0) {
		__u64 now = bpf_ktime_get_ns();
		/* packet pointers are read again after adjust_meta, which moves them */
		void *data = (void *)(long)ctx->data;
		__u64 *meta = (void *)(long)ctx->data_meta;

		if ((void *)(meta + 1) <= data) /* the verifier's bound */
			*meta = now;
	}
	return bpf_redirect_map(&cca_xsk_map, ctx->rx_queue_index, XDP_PASS);
}
