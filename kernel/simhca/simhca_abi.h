/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * simhca: messages exchanged between the simhca kernel driver and its
 * user-space relay through /dev/simhcaN. Every read() returns exactly one
 * struct simhca_msg and every write() takes exactly one.
 */
#ifndef SIMHCA_ABI_H
#define SIMHCA_ABI_H

#include <linux/types.h>

#define SIMHCA_ABI_VERSION	1
#define SIMHCA_MAD_SIZE		256
#define SIMHCA_PKEY_TBL_LEN	32

enum simhca_msg_type {
	/* both directions: one MAD on the wire */
	SIMHCA_MSG_MAD = 1,
	/* relay -> driver: the port's attributes as the fabric has them */
	SIMHCA_MSG_PORT = 2,
	/* driver -> relay: the locally set CapabilityMask bits changed */
	SIMHCA_MSG_CAPMASK = 3,
};

/* SIMHCA_MSG_PORT flags */
#define SIMHCA_PORT_F_CLIENT_REREG	(1U << 0)

struct simhca_mad {
	__u16 dlid;		/* host order; 0xffff for directed route */
	__u16 slid;
	__u32 dqpn;
	__u32 sqpn;
	__u32 qkey;
	__u16 pkey_index;
	__u8 sl;
	__u8 reserved;
	__u32 length;		/* bytes used in data */
	__u8 data[SIMHCA_MAD_SIZE];
};

struct simhca_port {
	__be64 node_guid;
	__be64 port_guid;
	__be64 subnet_prefix;
	__u32 cap_mask;		/* PortInfo:CapabilityMask of the fabric */
	__u16 lid;
	__u16 sm_lid;
	__u8 lmc;
	__u8 sm_sl;
	__u8 state;		/* enum ib_port_state (IBA PortState) */
	__u8 phys_state;	/* IBA PortPhysicalState */
	__u8 active_width;	/* IBA LinkWidthActive */
	__u8 active_speed;	/* IBA LinkSpeedActive */
	__u8 active_mtu;	/* enum ib_mtu */
	__u8 max_mtu;		/* enum ib_mtu */
	__u8 subnet_timeout;
	__u8 init_type_reply;
	__u8 max_vl_num;
	__u8 reserved;
	__u16 pkeys[SIMHCA_PKEY_TBL_LEN];
};

struct simhca_capmask {
	__u32 local_cap_mask;	/* bits set through modify_port (IsSM, ...) */
	__u32 reserved;
};

struct simhca_msg {
	__u32 type;		/* enum simhca_msg_type */
	__u32 flags;
	union {
		struct simhca_mad mad;
		struct simhca_port port;
		struct simhca_capmask capmask;
	};
};

#endif /* SIMHCA_ABI_H */
