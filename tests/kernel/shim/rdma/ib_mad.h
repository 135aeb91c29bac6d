/* The constants of <rdma/ib_mad.h> that sa_redirect.c uses. */
#ifndef SHIM_RDMA_IB_MAD_H
#define SHIM_RDMA_IB_MAD_H
#include <linux/kernel.h>
#define IB_MGMT_METHOD_GET				0x01
#define IB_MGMT_METHOD_SET				0x02
#define IB_MGMT_METHOD_RESP				0x80
#define IB_MGMT_MAD_STATUS_BAD_VERSION			0x0004
#define IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD		0x0008
#define IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB	0x000c

struct ib_mad_hdr {
	u8	base_version;
	u8	mgmt_class;
	u8	class_version;
	u8	method;
	__be16	status;
	__be16	class_specific;
	u64	tid;
	__be16	attr_id;
	__be16	resv;
	u32	attr_mod;
};

struct ib_mad {
	struct ib_mad_hdr	mad_hdr;
	u8			data[232];
};
#endif
