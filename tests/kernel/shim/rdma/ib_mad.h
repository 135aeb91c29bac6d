/* The constants of <rdma/ib_mad.h> that sa_redirect.c uses. */
#ifndef SHIM_RDMA_IB_MAD_H
#define SHIM_RDMA_IB_MAD_H
#define IB_MGMT_METHOD_GET				0x01
#define IB_MGMT_MAD_STATUS_BAD_VERSION			0x0004
#define IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD		0x0008
#define IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB	0x000c
#endif
