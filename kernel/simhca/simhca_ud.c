// SPDX-License-Identifier: GPL-2.0
/*
 * simhca: unreliable-datagram QPs. A send is delivered inside the driver to
 * the simhca devices of the guest: by DLID to the port that owns it (base LID
 * and LMC, as the fabric assigned them) and the destination QPN, or by MLID
 * to every QP attached to the group. The receiver checks the P_Key and the
 * Q_Key as an HCA does; the GRH is carried when the sender's address handle
 * has one. Nothing of the data path goes through the relay or ibsim.
 */
#include <linux/slab.h>

#include "simhca.h"

/* the guest's simhca devices, for delivery */
static DEFINE_SPINLOCK(simhca_fabric_lock);
static LIST_HEAD(simhca_fabric);

/* one datagram on its way */
struct simhca_pkt {
	struct simhca_dev *src_dev;
	struct simhca_qp *src_qp;
	const void *data;
	u32 len;
	u16 dlid;
	u16 slid;
	u8 sl;
	u32 sqpn;
	u32 dqpn;
	u32 qkey;
	u16 pkey;
	bool has_grh;
	struct ib_grh grh;
	bool has_imm;
	__be32 imm;
};

void simhca_fabric_join(struct simhca_dev *sdev)
{
	unsigned long flags;

	spin_lock_irqsave(&simhca_fabric_lock, flags);
	list_add_tail(&sdev->fabric, &simhca_fabric);
	spin_unlock_irqrestore(&simhca_fabric_lock, flags);
}

void simhca_fabric_leave(struct simhca_dev *sdev)
{
	unsigned long flags;

	spin_lock_irqsave(&simhca_fabric_lock, flags);
	list_del_init(&sdev->fabric);
	spin_unlock_irqrestore(&simhca_fabric_lock, flags);
}

static bool simhca_pkey_match(u16 a, u16 b)
{
	/* same partition, at least one full member */
	return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) &&
	       ((a | b) & 0x8000);
}

int simhca_ud_create(struct simhca_dev *sdev, struct simhca_qp *qp,
		     struct ib_qp_init_attr *init)
{
	unsigned long flags;
	int i;

	if (init->create_flags & ~IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK)
		return -EOPNOTSUPP;
	if (init->srq || !init->send_cq || !init->recv_cq)
		return -EINVAL;
	if (init->port_num > 1)
		return -EINVAL;
	qp->block_mc_loopback = !!(init->create_flags &
				   IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK);
	qp->max_send_sge = max_t(u32, init->cap.max_send_sge, 1);
	qp->max_recv_sge = max_t(u32, init->cap.max_recv_sge, 1);

	spin_lock_irqsave(&sdev->qp_lock, flags);
	for (i = 0; i < SIMHCA_MAX_UD_QP; i++)
		if (!sdev->ud_qp[i])
			break;
	if (i == SIMHCA_MAX_UD_QP) {
		spin_unlock_irqrestore(&sdev->qp_lock, flags);
		return -ENOMEM;
	}
	sdev->ud_qp[i] = qp;
	qp->ibqp.qp_num = SIMHCA_UD_QPN_BASE + i;
	spin_unlock_irqrestore(&sdev->qp_lock, flags);
	return 0;
}

static void simhca_free_list(struct list_head *list)
{
	struct simhca_recv_wqe *wqe, *tmp;

	list_for_each_entry_safe(wqe, tmp, list, list)
		kfree(wqe);
}

void simhca_ud_destroy(struct simhca_dev *sdev, struct simhca_qp *qp)
{
	struct simhca_mcast *m, *tmp;
	unsigned long flags;
	LIST_HEAD(mcast);
	LIST_HEAD(rq);
	u32 n = qp->ibqp.qp_num - SIMHCA_UD_QPN_BASE;

	/* after this no delivery can reach the QP */
	spin_lock_irqsave(&sdev->qp_lock, flags);
	if (n < SIMHCA_MAX_UD_QP && sdev->ud_qp[n] == qp)
		sdev->ud_qp[n] = NULL;
	list_for_each_entry_safe(m, tmp, &sdev->mcast, list) {
		if (m->qp == qp) {
			list_move(&m->list, &mcast);
			sdev->n_mcast--;
		}
	}
	spin_unlock_irqrestore(&sdev->qp_lock, flags);
	list_for_each_entry_safe(m, tmp, &mcast, list)
		kfree(m);

	spin_lock_irqsave(&qp->lock, flags);
	list_splice_init(&qp->rq, &rq);
	qp->rq_len = 0;
	spin_unlock_irqrestore(&qp->lock, flags);
	simhca_free_list(&rq);
}

static void simhca_flush_wqe(struct simhca_qp *qp, u64 wr_id,
			     enum ib_wc_opcode opcode)
{
	struct ib_wc wc = {
		.wr_id = wr_id,
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = opcode,
		.qp = &qp->ibqp,
		.port_num = 1,
	};
	struct ib_cq *cq = opcode == IB_WC_RECV ? qp->ibqp.recv_cq :
						  qp->ibqp.send_cq;

	simhca_count(to_sdev(qp->ibqp.device), SIMHCA_CNT_FLUSHED);
	simhca_cq_complete(to_scq(cq), &wc);
}

/* the QP entered ERR: every posted receive completes with a flush error */
static void simhca_flush_rq(struct simhca_qp *qp)
{
	struct simhca_recv_wqe *wqe, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&qp->lock, flags);
	list_splice_init(&qp->rq, &list);
	qp->rq_len = 0;
	spin_unlock_irqrestore(&qp->lock, flags);
	list_for_each_entry_safe(wqe, tmp, &list, list) {
		simhca_flush_wqe(qp, wqe->wr_id, IB_WC_RECV);
		kfree(wqe);
	}
}

int simhca_ud_modify(struct simhca_qp *qp, struct ib_qp_attr *attr, int mask)
{
	enum ib_qp_state cur, next;
	unsigned long flags;
	LIST_HEAD(rq);

	if (mask & ~(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_PKEY_INDEX |
		     IB_QP_PORT | IB_QP_QKEY | IB_QP_SQ_PSN |
		     IB_QP_EN_SQD_ASYNC_NOTIFY))
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= SIMHCA_PKEY_TBL_LEN)
		return -EINVAL;
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;

	spin_lock_irqsave(&qp->lock, flags);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, IB_QPT_UD, mask)) {
		spin_unlock_irqrestore(&qp->lock, flags);
		return -EINVAL;
	}
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	qp->state = next;
	if (next == IB_QPS_RESET) {
		list_splice_init(&qp->rq, &rq);
		qp->rq_len = 0;
	}
	spin_unlock_irqrestore(&qp->lock, flags);

	simhca_free_list(&rq);
	if (next == IB_QPS_ERR)
		simhca_flush_rq(qp);
	return 0;
}

int simhca_ud_post_recv(struct simhca_qp *qp, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct simhca_recv_wqe *wqe;
	unsigned long flags;
	bool flush;

	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || wr->num_sge > qp->max_recv_sge ||
		    qp->state == IB_QPS_RESET) {
			*bad_wr = wr;
			return -EINVAL;
		}
		wqe = kmalloc(sizeof(*wqe), GFP_ATOMIC);
		if (!wqe) {
			*bad_wr = wr;
			return -ENOMEM;
		}
		wqe->wr_id = wr->wr_id;
		wqe->num_sge = wr->num_sge;
		memcpy(wqe->sge, wr->sg_list, wr->num_sge * sizeof(*wr->sg_list));
		spin_lock_irqsave(&qp->lock, flags);
		flush = qp->state == IB_QPS_ERR;
		if (!flush) {
			list_add_tail(&wqe->list, &qp->rq);
			qp->rq_len++;
		}
		spin_unlock_irqrestore(&qp->lock, flags);
		if (flush) {
			simhca_flush_wqe(qp, wqe->wr_id, IB_WC_RECV);
			kfree(wqe);
		}
	}
	return 0;
}

static void simhca_scatter_ud(const struct ib_sge *sge, int num, size_t off,
			      const void *src, size_t len)
{
	int i;

	for (i = 0; i < num && len; i++) {
		size_t n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = min_t(size_t, len, sge[i].length - off);
		memcpy((u8 *)(uintptr_t)sge[i].addr + off, src, n);
		src += n;
		len -= n;
		off = 0;
	}
}

/*
 * One datagram into one QP of rdev: P_Key and Q_Key checks, then the first
 * posted receive. Called with rdev->qp_lock held.
 */
static bool simhca_rx_one(struct simhca_dev *rdev, struct simhca_qp *qp,
			  const struct simhca_pkt *pkt, const u16 *pkeys,
			  u8 lmc, bool mcast)
{
	struct simhca_recv_wqe *wqe = NULL;
	struct ib_wc wc = {};
	unsigned long flags;
	enum ib_qp_state state;
	u64 room = 0;
	u16 pkey_index;
	u32 qkey;
	int i;

	spin_lock_irqsave(&qp->lock, flags);
	state = qp->state;
	qkey = qp->qkey;
	pkey_index = qp->pkey_index;
	if (state < IB_QPS_RTR || state == IB_QPS_ERR) {
		spin_unlock_irqrestore(&qp->lock, flags);
		simhca_count(rdev, SIMHCA_CNT_DROP_QP_STATE);
		return false;
	}
	if (!simhca_pkey_match(pkt->pkey, pkeys[pkey_index])) {
		spin_unlock_irqrestore(&qp->lock, flags);
		simhca_count(rdev, SIMHCA_CNT_DROP_PKEY);
		return false;
	}
	if (pkt->qkey != qkey) {
		spin_unlock_irqrestore(&qp->lock, flags);
		simhca_count(rdev, SIMHCA_CNT_DROP_QKEY);
		return false;
	}
	if (!list_empty(&qp->rq)) {
		wqe = list_first_entry(&qp->rq, struct simhca_recv_wqe, list);
		list_del(&wqe->list);
		qp->rq_len--;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (!wqe) {
		/* UD: no receive posted, the datagram is lost */
		simhca_count(rdev, SIMHCA_CNT_DROP_NO_RECV);
		return false;
	}

	for (i = 0; i < wqe->num_sge; i++)
		room += wqe->sge[i].length;

	wc.wr_id = wqe->wr_id;
	wc.opcode = IB_WC_RECV;
	wc.qp = &qp->ibqp;
	wc.port_num = 1;
	if (room < SIMHCA_GRH_BYTES + (u64)pkt->len) {
		wc.status = IB_WC_LOC_LEN_ERR;
		simhca_count(rdev, SIMHCA_CNT_RX_LEN_ERR);
	} else {
		if (pkt->has_grh)
			simhca_scatter_ud(wqe->sge, wqe->num_sge, 0, &pkt->grh,
					  sizeof(pkt->grh));
		simhca_scatter_ud(wqe->sge, wqe->num_sge, SIMHCA_GRH_BYTES,
				  pkt->data, pkt->len);
		wc.status = IB_WC_SUCCESS;
		wc.byte_len = SIMHCA_GRH_BYTES + pkt->len;
		wc.src_qp = pkt->sqpn;
		wc.slid = pkt->slid;
		wc.sl = pkt->sl;
		wc.pkey_index = pkey_index;
		wc.dlid_path_bits = mcast ? 0 : pkt->dlid & ((1U << lmc) - 1);
		if (pkt->has_grh)
			wc.wc_flags |= IB_WC_GRH;
		if (pkt->has_imm) {
			wc.wc_flags |= IB_WC_WITH_IMM;
			wc.ex.imm_data = pkt->imm;
		}
		simhca_count(rdev, SIMHCA_CNT_UD_RX);
		if (mcast)
			simhca_count(rdev, SIMHCA_CNT_UD_RX_MCAST);
	}
	kfree(wqe);
	simhca_cq_complete(to_scq(qp->ibqp.recv_cq), &wc);
	return true;
}

/* the datagram into rdev, if its port is the destination; rdev->qp_lock held */
static void simhca_rx_dev(struct simhca_dev *rdev, const struct simhca_pkt *pkt,
			  bool mcast, unsigned int *hits)
{
	u16 pkeys[SIMHCA_PKEY_TBL_LEN];
	struct simhca_mcast *m;
	union ib_gid gid;
	unsigned long flags;
	bool active;
	u16 base;
	u8 lmc;
	u32 n;

	spin_lock_irqsave(&rdev->attr_lock, flags);
	active = rdev->attr.state == IB_PORT_ACTIVE;
	base = rdev->attr.lid;
	lmc = rdev->attr.lmc;
	memcpy(pkeys, rdev->attr.pkeys, sizeof(pkeys));
	gid.global.subnet_prefix = rdev->attr.subnet_prefix;
	gid.global.interface_id = rdev->attr.port_guid;
	spin_unlock_irqrestore(&rdev->attr_lock, flags);
	if (!active)
		return;

	if (mcast) {
		list_for_each_entry(m, &rdev->mcast, list) {
			if (m->mlid != pkt->dlid)
				continue;
			if (pkt->has_grh &&
			    memcmp(&m->mgid, &pkt->grh.dgid, sizeof(m->mgid)))
				continue;
			if (m->qp == pkt->src_qp && m->qp->block_mc_loopback)
				continue;
			(*hits)++;
			simhca_rx_one(rdev, m->qp, pkt, pkeys, lmc, true);
		}
		return;
	}
	if (!base || (pkt->dlid & ~((1U << lmc) - 1)) != base)
		return;
	(*hits)++;
	n = pkt->dqpn - SIMHCA_UD_QPN_BASE;
	if (pkt->dqpn < SIMHCA_UD_QPN_BASE || n >= SIMHCA_MAX_UD_QP ||
	    !rdev->ud_qp[n]) {
		simhca_count(rdev, SIMHCA_CNT_DROP_NO_DEST);
		return;
	}
	if (pkt->has_grh && memcmp(&gid, &pkt->grh.dgid, sizeof(gid))) {
		simhca_count(rdev, SIMHCA_CNT_DROP_DGID);
		return;
	}
	simhca_rx_one(rdev, rdev->ud_qp[n], pkt, pkeys, lmc, false);
}

static void simhca_fabric_deliver(const struct simhca_pkt *pkt)
{
	bool mcast = pkt->dlid >= be16_to_cpu(IB_MULTICAST_LID_BASE) &&
		     pkt->dlid != be16_to_cpu(IB_LID_PERMISSIVE);
	struct simhca_dev *rdev;
	unsigned int hits = 0;
	unsigned long flags, qflags;

	if (mcast && pkt->dqpn != SIMHCA_MCAST_QPN) {
		simhca_count(pkt->src_dev, SIMHCA_CNT_DROP_NO_DEST);
		return;
	}
	spin_lock_irqsave(&simhca_fabric_lock, flags);
	list_for_each_entry(rdev, &simhca_fabric, fabric) {
		spin_lock_irqsave(&rdev->qp_lock, qflags);
		simhca_rx_dev(rdev, pkt, mcast, &hits);
		spin_unlock_irqrestore(&rdev->qp_lock, qflags);
		if (hits && !mcast)
			break;
	}
	spin_unlock_irqrestore(&simhca_fabric_lock, flags);
	/* a unicast DLID no port owns: lost on the wire */
	if (!hits && !mcast)
		simhca_count(pkt->src_dev, SIMHCA_CNT_DROP_NO_DEST);
}

/* gather, address and deliver one send; returns the completion status */
static enum ib_wc_status simhca_ud_send_one(struct simhca_qp *qp,
					    const struct ib_send_wr *wr,
					    u32 qp_qkey, u16 pkey_index)
{
	struct simhca_dev *sdev = to_sdev(qp->ibqp.device);
	const struct ib_ud_wr *ud = ud_wr(wr);
	struct simhca_pkt pkt = {};
	const struct rdma_ah_attr *ah;
	unsigned long flags;
	u64 len = 0;
	u32 mtu, off = 0;
	bool active;
	u8 *buf;
	u16 lid;
	int i;

	if (!ud->ah)
		return IB_WC_LOC_QP_OP_ERR;
	ah = &to_sah(ud->ah)->attr;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;

	spin_lock_irqsave(&sdev->attr_lock, flags);
	active = sdev->attr.state == IB_PORT_ACTIVE;
	lid = sdev->attr.lid;
	mtu = ib_mtu_enum_to_int(sdev->attr.active_mtu);
	pkt.pkey = sdev->attr.pkeys[pkey_index];
	pkt.grh.sgid.global.subnet_prefix = sdev->attr.subnet_prefix;
	pkt.grh.sgid.global.interface_id = sdev->attr.port_guid;
	spin_unlock_irqrestore(&sdev->attr_lock, flags);

	if (len > mtu)
		return IB_WC_LOC_LEN_ERR;
	/* a port that is not ACTIVE sends nothing: the datagram is lost */
	if (!active)
		return IB_WC_SUCCESS;

	buf = kmalloc(max_t(u32, len, 1), GFP_ATOMIC);
	if (!buf)
		return IB_WC_LOC_QP_OP_ERR;
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(buf + off, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}

	pkt.src_dev = sdev;
	pkt.src_qp = qp;
	pkt.data = buf;
	pkt.len = len;
	pkt.dlid = rdma_ah_get_dlid(ah);
	pkt.slid = lid | rdma_ah_get_path_bits(ah);
	pkt.sl = rdma_ah_get_sl(ah);
	pkt.sqpn = qp->ibqp.qp_num;
	pkt.dqpn = ud->remote_qpn & 0xffffff;
	/* a Q_Key with the high bit set means the QP's own */
	pkt.qkey = (ud->remote_qkey & 0x80000000) ? qp_qkey : ud->remote_qkey;
	if (rdma_ah_get_ah_flags(ah) & IB_AH_GRH) {
		const struct ib_global_route *g = rdma_ah_read_grh(ah);

		pkt.has_grh = true;
		pkt.grh.version_tclass_flow =
			cpu_to_be32((6U << 28) | ((u32)g->traffic_class << 20) |
				    (g->flow_label & 0xfffff));
		/* BTH + DETH + payload + ICRC */
		pkt.grh.paylen = cpu_to_be16(12 + 8 + len + 4);
		pkt.grh.next_hdr = 0x1b;
		pkt.grh.hop_limit = g->hop_limit;
		pkt.grh.dgid = g->dgid;
	}
	if (wr->opcode == IB_WR_SEND_WITH_IMM) {
		pkt.has_imm = true;
		pkt.imm = wr->ex.imm_data;
	}
	simhca_count(sdev, SIMHCA_CNT_UD_TX);
	if (pkt.dlid >= be16_to_cpu(IB_MULTICAST_LID_BASE) &&
	    pkt.dlid != be16_to_cpu(IB_LID_PERMISSIVE))
		simhca_count(sdev, SIMHCA_CNT_UD_TX_MCAST);
	simhca_fabric_deliver(&pkt);
	kfree(buf);
	return IB_WC_SUCCESS;
}

int simhca_ud_post_send(struct simhca_qp *qp, const struct ib_send_wr *wr,
			const struct ib_send_wr **bad_wr)
{
	struct simhca_dev *sdev = to_sdev(qp->ibqp.device);
	enum ib_wc_status status;
	enum ib_qp_state state;
	unsigned long flags;
	struct ib_wc wc;
	u16 pkey_index;
	u32 qkey;

	for (; wr; wr = wr->next) {
		/* what an HCA refuses at once: the WR never enters the queue */
		if ((wr->opcode != IB_WR_SEND &&
		     wr->opcode != IB_WR_SEND_WITH_IMM) ||
		    wr->num_sge < 0 || wr->num_sge > qp->max_send_sge) {
			*bad_wr = wr;
			return -EINVAL;
		}
		spin_lock_irqsave(&qp->lock, flags);
		state = qp->state;
		qkey = qp->qkey;
		pkey_index = qp->pkey_index;
		spin_unlock_irqrestore(&qp->lock, flags);
		if (state < IB_QPS_RTS) {
			*bad_wr = wr;
			return -EINVAL;
		}
		if (state == IB_QPS_ERR || state == IB_QPS_SQE) {
			simhca_flush_wqe(qp, wr->wr_id, IB_WC_SEND);
			continue;
		}

		status = simhca_ud_send_one(qp, wr, qkey, pkey_index);
		if (status != IB_WC_SUCCESS) {
			/* a send error: the UD QP enters SQE, receives go on */
			simhca_count(sdev, SIMHCA_CNT_TX_ERR);
			spin_lock_irqsave(&qp->lock, flags);
			if (qp->state == IB_QPS_RTS)
				qp->state = IB_QPS_SQE;
			spin_unlock_irqrestore(&qp->lock, flags);
		} else if (qp->sq_sig_type != IB_SIGNAL_ALL_WR &&
			   !(wr->send_flags & IB_SEND_SIGNALED)) {
			continue;
		}
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr->wr_id;
		wc.status = status;
		wc.opcode = IB_WC_SEND;
		wc.qp = &qp->ibqp;
		wc.port_num = 1;
		simhca_cq_complete(to_scq(qp->ibqp.send_cq), &wc);
	}
	return 0;
}

int simhca_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct simhca_dev *sdev = to_sdev(ibqp->device);
	struct simhca_qp *qp = to_sqp(ibqp);
	struct simhca_mcast *m, *new;
	unsigned long flags;
	int ret = 0;

	if (ibqp->qp_type != IB_QPT_UD)
		return -EINVAL;
	new = kzalloc(sizeof(*new), GFP_KERNEL);
	if (!new)
		return -ENOMEM;
	new->mgid = *gid;
	new->mlid = lid;
	new->qp = qp;

	spin_lock_irqsave(&sdev->qp_lock, flags);
	list_for_each_entry(m, &sdev->mcast, list) {
		if (m->qp == qp && m->mlid == lid &&
		    !memcmp(&m->mgid, gid, sizeof(*gid)))
			goto out;	/* attached already */
	}
	if (sdev->n_mcast >= SIMHCA_MAX_MCAST) {
		ret = -ENOMEM;
		goto out;
	}
	list_add_tail(&new->list, &sdev->mcast);
	sdev->n_mcast++;
	new = NULL;
out:
	spin_unlock_irqrestore(&sdev->qp_lock, flags);
	kfree(new);
	return ret;
}

int simhca_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct simhca_dev *sdev = to_sdev(ibqp->device);
	struct simhca_qp *qp = to_sqp(ibqp);
	struct simhca_mcast *m, *found = NULL;
	unsigned long flags;

	spin_lock_irqsave(&sdev->qp_lock, flags);
	list_for_each_entry(m, &sdev->mcast, list) {
		if (m->qp == qp && m->mlid == lid &&
		    !memcmp(&m->mgid, gid, sizeof(*gid))) {
			list_del(&m->list);
			sdev->n_mcast--;
			found = m;
			break;
		}
	}
	spin_unlock_irqrestore(&sdev->qp_lock, flags);
	kfree(found);
	return found ? 0 : -EINVAL;
}

static const struct rdma_stat_desc simhca_counter_descs[] = {
	[SIMHCA_CNT_UD_TX].name = "ud_tx_packets",
	[SIMHCA_CNT_UD_TX_MCAST].name = "ud_tx_mcast_packets",
	[SIMHCA_CNT_UD_RX].name = "ud_rx_packets",
	[SIMHCA_CNT_UD_RX_MCAST].name = "ud_rx_mcast_packets",
	[SIMHCA_CNT_DROP_NO_DEST].name = "ud_drop_no_dest",
	[SIMHCA_CNT_DROP_PKEY].name = "ud_drop_pkey",
	[SIMHCA_CNT_DROP_QKEY].name = "ud_drop_qkey",
	[SIMHCA_CNT_DROP_DGID].name = "ud_drop_dgid",
	[SIMHCA_CNT_DROP_QP_STATE].name = "ud_drop_qp_state",
	[SIMHCA_CNT_DROP_NO_RECV].name = "ud_drop_no_recv",
	[SIMHCA_CNT_RX_LEN_ERR].name = "ud_rx_len_err",
	[SIMHCA_CNT_TX_ERR].name = "ud_tx_err",
	[SIMHCA_CNT_FLUSHED].name = "wr_flushed",
};

struct rdma_hw_stats *simhca_alloc_hw_port_stats(struct ib_device *ibdev,
						 u32 port)
{
	return rdma_alloc_hw_stats_struct(simhca_counter_descs,
					  SIMHCA_NUM_COUNTERS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int simhca_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			u32 port, int index)
{
	struct simhca_dev *sdev = to_sdev(ibdev);
	int i;

	for (i = 0; i < SIMHCA_NUM_COUNTERS; i++)
		stats->value[i] = atomic64_read(&sdev->counters[i]);
	return SIMHCA_NUM_COUNTERS;
}
