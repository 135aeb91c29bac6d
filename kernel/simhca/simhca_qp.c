// SPDX-License-Identifier: GPL-2.0
/*
 * simhca: the special QPs (QP0 for SMPs, QP1 for GMPs). Sends go to the
 * relay, or straight back to the port for a GMP to one of its own LIDs;
 * MADs from the relay complete posted receives. UD QPs are simhca_ud.c's;
 * there are no connected (RC/UC) QPs.
 */
#include <linux/slab.h>

#include "simhca.h"

static int simhca_qp_index(enum ib_qp_type type)
{
	switch (type) {
	case IB_QPT_SMI:
		return 0;
	case IB_QPT_GSI:
		return 1;
	default:
		return -1;
	}
}

int simhca_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		     struct ib_udata *udata)
{
	struct simhca_dev *sdev = to_sdev(ibqp->device);
	struct simhca_qp *qp = to_sqp(ibqp);
	int n = simhca_qp_index(init->qp_type);
	unsigned long flags;

	if (udata || (n < 0 && init->qp_type != IB_QPT_UD))
		return -EOPNOTSUPP;
	if (init->cap.max_send_sge > SIMHCA_MAX_SGE ||
	    init->cap.max_recv_sge > SIMHCA_MAX_SGE ||
	    init->cap.max_send_wr > SIMHCA_MAX_QP_WR ||
	    init->cap.max_recv_wr > SIMHCA_MAX_QP_WR)
		return -EINVAL;

	spin_lock_init(&qp->lock);
	INIT_LIST_HEAD(&qp->rq);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_type = init->sq_sig_type;
	if (init->qp_type == IB_QPT_UD)
		return simhca_ud_create(sdev, qp, init);
	ibqp->qp_num = n;

	spin_lock_irqsave(&sdev->qp_lock, flags);
	if (sdev->qp[n]) {
		spin_unlock_irqrestore(&sdev->qp_lock, flags);
		return -EBUSY;
	}
	sdev->qp[n] = qp;
	spin_unlock_irqrestore(&sdev->qp_lock, flags);
	return 0;
}

static void simhca_qp_flush(struct simhca_qp *qp)
{
	struct simhca_recv_wqe *wqe, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&qp->lock, flags);
	list_splice_init(&qp->rq, &list);
	qp->rq_len = 0;
	spin_unlock_irqrestore(&qp->lock, flags);
	list_for_each_entry_safe(wqe, tmp, &list, list)
		kfree(wqe);
}

int simhca_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct simhca_dev *sdev = to_sdev(ibqp->device);
	struct simhca_qp *qp = to_sqp(ibqp);
	unsigned long flags;

	if (ibqp->qp_type == IB_QPT_UD) {
		simhca_ud_destroy(sdev, qp);
		return 0;
	}
	spin_lock_irqsave(&sdev->qp_lock, flags);
	if (sdev->qp[ibqp->qp_num] == qp)
		sdev->qp[ibqp->qp_num] = NULL;
	spin_unlock_irqrestore(&sdev->qp_lock, flags);
	simhca_qp_flush(qp);
	return 0;
}

int simhca_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		     int mask, struct ib_udata *udata)
{
	struct simhca_qp *qp = to_sqp(ibqp);
	unsigned long flags;
	bool flush = false;

	if (ibqp->qp_type == IB_QPT_UD)
		return simhca_ud_modify(qp, attr, mask);
	spin_lock_irqsave(&qp->lock, flags);
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	if (mask & IB_QP_STATE) {
		qp->state = attr->qp_state;
		flush = attr->qp_state == IB_QPS_RESET;
	}
	spin_unlock_irqrestore(&qp->lock, flags);
	if (flush)
		simhca_qp_flush(qp);
	return 0;
}

int simhca_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int mask, struct ib_qp_init_attr *init)
{
	struct simhca_qp *qp = to_sqp(ibqp);
	unsigned long flags;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	spin_lock_irqsave(&qp->lock, flags);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->qkey = qp->qkey;
	attr->pkey_index = qp->pkey_index;
	spin_unlock_irqrestore(&qp->lock, flags);
	attr->port_num = 1;
	attr->cap.max_send_wr = SIMHCA_MAX_QP_WR;
	attr->cap.max_recv_wr = SIMHCA_MAX_QP_WR;
	attr->cap.max_send_sge = qp->max_send_sge ?: SIMHCA_MAX_SGE;
	attr->cap.max_recv_sge = qp->max_recv_sge ?: SIMHCA_MAX_SGE;
	init->qp_type = ibqp->qp_type;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_type;
	init->port_num = 1;
	return 0;
}

int simhca_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr)
{
	struct simhca_qp *qp = to_sqp(ibqp);
	struct simhca_recv_wqe *wqe;
	unsigned long flags;

	if (ibqp->qp_type == IB_QPT_UD)
		return simhca_ud_post_recv(qp, wr, bad_wr);
	for (; wr; wr = wr->next) {
		if (wr->num_sge > SIMHCA_MAX_SGE) {
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
		list_add_tail(&wqe->list, &qp->rq);
		qp->rq_len++;
		spin_unlock_irqrestore(&qp->lock, flags);
	}
	return 0;
}

/* copy len bytes at src into the buffers of sge[], skipping off bytes */
static void simhca_scatter(const struct ib_sge *sge, int num, size_t off,
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

/* a MAD arrived for this port (from the relay or looped back) */
void simhca_deliver(struct simhca_dev *sdev, const struct simhca_mad *mad)
{
	static const u8 no_grh[SIMHCA_GRH_BYTES];
	struct simhca_recv_wqe *wqe = NULL;
	struct simhca_qp *qp;
	struct ib_wc wc = {};
	unsigned long flags, qflags;
	size_t len = min_t(size_t, mad->length, SIMHCA_MAD_SIZE);
	u8 lmc;

	if (mad->dqpn > 1)
		return;

	spin_lock_irqsave(&sdev->attr_lock, flags);
	lmc = sdev->attr.lmc;
	spin_unlock_irqrestore(&sdev->attr_lock, flags);

	spin_lock_irqsave(&sdev->qp_lock, flags);
	qp = sdev->qp[mad->dqpn];
	if (!qp)
		goto out;
	spin_lock_irqsave(&qp->lock, qflags);
	if (qp->state >= IB_QPS_RTR && qp->state <= IB_QPS_SQD &&
	    !list_empty(&qp->rq)) {
		wqe = list_first_entry(&qp->rq, struct simhca_recv_wqe, list);
		list_del(&wqe->list);
		qp->rq_len--;
	} else {
		qp->rx_dropped++;
	}
	spin_unlock_irqrestore(&qp->lock, qflags);
	if (!wqe)
		goto out;

	simhca_scatter(wqe->sge, wqe->num_sge, 0, no_grh, sizeof(no_grh));
	simhca_scatter(wqe->sge, wqe->num_sge, sizeof(no_grh), mad->data, len);

	wc.wr_id = wqe->wr_id;
	wc.status = IB_WC_SUCCESS;
	wc.opcode = IB_WC_RECV;
	wc.byte_len = sizeof(no_grh) + len;
	wc.qp = &qp->ibqp;
	wc.src_qp = mad->sqpn;
	wc.slid = mad->slid;
	wc.sl = mad->sl;
	wc.dlid_path_bits = mad->dlid & ((1U << lmc) - 1);
	wc.pkey_index = mad->pkey_index;
	wc.port_num = 1;
	kfree(wqe);
	simhca_cq_complete(to_scq(qp->ibqp.recv_cq), &wc);
out:
	spin_unlock_irqrestore(&sdev->qp_lock, flags);
}

static int simhca_send_one(struct simhca_qp *qp, const struct ib_send_wr *wr)
{
	struct simhca_dev *sdev = to_sdev(qp->ibqp.device);
	const struct ib_ud_wr *ud = ud_wr(wr);
	struct simhca_ah *ah = to_sah(ud->ah);
	struct simhca_msg *msg;
	size_t off = 0;
	u16 lid, dlid;
	bool local;
	u8 class;
	int i;

	if (wr->opcode != IB_WR_SEND || wr->num_sge > SIMHCA_MAX_SGE)
		return -EINVAL;

	msg = kzalloc(sizeof(*msg), GFP_ATOMIC);
	if (!msg)
		return -ENOMEM;
	msg->type = SIMHCA_MSG_MAD;
	for (i = 0; i < wr->num_sge && off < SIMHCA_MAD_SIZE; i++) {
		size_t n = min_t(size_t, wr->sg_list[i].length,
				 SIMHCA_MAD_SIZE - off);

		memcpy(msg->mad.data + off,
		       (void *)(uintptr_t)wr->sg_list[i].addr, n);
		off += n;
	}
	dlid = rdma_ah_get_dlid(&ah->attr);
	class = msg->mad.data[1];
	msg->mad.length = off;
	msg->mad.dlid = dlid;
	msg->mad.dqpn = ud->remote_qpn;
	msg->mad.sqpn = qp->ibqp.qp_num;
	msg->mad.qkey = ud->remote_qkey;
	msg->mad.pkey_index = ud->pkey_index;
	msg->mad.sl = rdma_ah_get_sl(&ah->attr);

	local = class != IB_MGMT_CLASS_SUBN_LID_ROUTED &&
		class != IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE &&
		simhca_lid_is_local(sdev, dlid, &lid);
	if (class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		msg->mad.slid = 0xffff;
	} else {
		if (!local)
			simhca_lid_is_local(sdev, 0, &lid);
		msg->mad.slid = lid | rdma_ah_get_path_bits(&ah->attr);
	}
	/* a GMP to one of the port's own LIDs never leaves the HCA */
	if (local)
		simhca_deliver(sdev, &msg->mad);
	else
		simhca_relay_queue(sdev, msg);
	kfree(msg);
	return 0;
}

int simhca_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr)
{
	struct simhca_qp *qp = to_sqp(ibqp);
	struct ib_wc wc;
	int err;

	if (ibqp->qp_type == IB_QPT_UD)
		return simhca_ud_post_send(qp, wr, bad_wr);
	for (; wr; wr = wr->next) {
		err = simhca_send_one(qp, wr);
		if (err) {
			*bad_wr = wr;
			return err;
		}
		if (qp->sq_sig_type != IB_SIGNAL_ALL_WR &&
		    !(wr->send_flags & IB_SEND_SIGNALED))
			continue;
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr->wr_id;
		wc.status = IB_WC_SUCCESS;
		wc.opcode = IB_WC_SEND;
		wc.qp = ibqp;
		wc.port_num = 1;
		simhca_cq_complete(to_scq(ibqp->send_cq), &wc);
	}
	return 0;
}
