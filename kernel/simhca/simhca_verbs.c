// SPDX-License-Identifier: GPL-2.0
/*
 * simhca: device attributes, protection domains, address handles and the
 * memory-region stubs the core requires of a kernel verbs provider.
 */
#include <linux/err.h>
#include <linux/slab.h>

#include "simhca.h"

static int simhca_query_device(struct ib_device *ibdev,
			       struct ib_device_attr *attr,
			       struct ib_udata *udata)
{
	struct simhca_dev *sdev = to_sdev(ibdev);

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = 1;
	attr->sys_image_guid = sdev->ibdev.node_guid;
	attr->max_mr_size = ~0ULL;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = 0x02c9;
	attr->vendor_part_id = 0x5a5a;
	attr->max_qp = 2 + SIMHCA_MAX_UD_QP;
	attr->max_mcast_grp = SIMHCA_MAX_MCAST;
	attr->max_mcast_qp_attach = SIMHCA_MAX_UD_QP;
	attr->max_total_mcast_qp_attach = SIMHCA_MAX_MCAST;
	attr->max_qp_wr = SIMHCA_MAX_QP_WR;
	attr->kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	attr->max_send_sge = SIMHCA_MAX_SGE;
	attr->max_recv_sge = SIMHCA_MAX_SGE;
	attr->max_cq = 64;
	attr->max_cqe = SIMHCA_MAX_CQE;
	attr->max_mr = 64;
	attr->max_pd = 64;
	attr->max_ah = 65536;
	attr->max_pkeys = SIMHCA_PKEY_TBL_LEN;
	attr->local_ca_ack_delay = 15;
	return 0;
}

static int simhca_get_port_immutable(struct ib_device *ibdev, u32 port,
				     struct ib_port_immutable *immutable)
{
	immutable->pkey_tbl_len = SIMHCA_PKEY_TBL_LEN;
	immutable->gid_tbl_len = 1;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer simhca_get_link_layer(struct ib_device *ibdev,
						  u32 port)
{
	return IB_LINK_LAYER_INFINIBAND;
}

static int simhca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return 0;
}

static int simhca_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return 0;
}

static int simhca_create_ah(struct ib_ah *ibah,
			    struct rdma_ah_init_attr *init_attr,
			    struct ib_udata *udata)
{
	struct simhca_ah *ah = to_sah(ibah);

	if (init_attr->ah_attr->type != RDMA_AH_ATTR_TYPE_IB)
		return -EINVAL;
	ah->attr = *init_attr->ah_attr;
	return 0;
}

static int simhca_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = to_sah(ibah)->attr;
	return 0;
}

static int simhca_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

static struct ib_mr *simhca_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct simhca_mr *mr = kzalloc(sizeof(*mr), GFP_KERNEL);

	if (!mr)
		return ERR_PTR(-ENOMEM);
	return &mr->ibmr;
}

static struct ib_mr *simhca_reg_user_mr(struct ib_pd *ibpd, u64 start,
					u64 length, u64 iova, int access,
					struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static int simhca_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	kfree(container_of(ibmr, struct simhca_mr, ibmr));
	return 0;
}

const struct ib_device_ops simhca_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = 1,

	.query_device = simhca_query_device,
	.query_port = simhca_query_port,
	.modify_port = simhca_modify_port,
	.get_port_immutable = simhca_get_port_immutable,
	.get_link_layer = simhca_get_link_layer,
	.query_pkey = simhca_query_pkey,
	.query_gid = simhca_query_gid,

	.alloc_pd = simhca_alloc_pd,
	.dealloc_pd = simhca_dealloc_pd,
	.create_ah = simhca_create_ah,
	.query_ah = simhca_query_ah,
	.destroy_ah = simhca_destroy_ah,
	.get_dma_mr = simhca_get_dma_mr,
	.reg_user_mr = simhca_reg_user_mr,
	.dereg_mr = simhca_dereg_mr,

	.create_cq = simhca_create_cq,
	.destroy_cq = simhca_destroy_cq,
	.poll_cq = simhca_poll_cq,
	.req_notify_cq = simhca_req_notify_cq,

	.create_qp = simhca_create_qp,
	.modify_qp = simhca_modify_qp,
	.query_qp = simhca_query_qp,
	.destroy_qp = simhca_destroy_qp,
	.post_send = simhca_post_send,
	.post_recv = simhca_post_recv,
	.attach_mcast = simhca_attach_mcast,
	.detach_mcast = simhca_detach_mcast,

	.alloc_hw_port_stats = simhca_alloc_hw_port_stats,
	.get_hw_stats = simhca_get_hw_stats,

	INIT_RDMA_OBJ_SIZE(ib_ah, simhca_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, simhca_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, simhca_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, simhca_qp, ibqp),
};
