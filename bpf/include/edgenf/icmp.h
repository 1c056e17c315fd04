// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ICMP and ARP wire formats.
 *
 * The UAPI headers that carry these (linux/icmp.h, linux/if_arp.h) include
 * linux/if.h, which pulls in the C library's sys/socket.h and with it a
 * dependency on the host's libc headers (gnu/stubs-32.h on a BPF target).
 * Like Cilium's bpf/, we define what we use ourselves so every eBPF object
 * builds from kernel UAPI, libbpf and our own headers alone. */
#ifndef EDGENF_ICMP_H
#define EDGENF_ICMP_H

#include <linux/types.h>

#define ICMP_ECHOREPLY 0
#define ICMP_DEST_UNREACH 3
#define ICMP_ECHO 8
#define ICMP_TIME_EXCEEDED 11
#define ICMP_PARAMETERPROB 12

/* Layout of struct icmphdr in linux/icmp.h. */
struct icmphdr {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	union {
		struct {
			__be16 id;
			__be16 sequence;
		} echo;
		__be32 gateway;
		struct {
			__be16 __unused;
			__be16 mtu;
		} frag;
		__u8 reserved[4];
	} un;
};

#define ARPHRD_ETHER 1
#define ARPOP_REQUEST 1
#define ARPOP_REPLY 2

#endif
