// SPDX-License-Identifier: GPL-2.0
/*
 * simhca: completion queues, a ring of ib_wc filled by the QPs.
 */
#include <linux/mm.h>
#include <linux/slab.h>

#include "simhca.h"

int simhca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		     SIMHCA_CQ_ARG)
{
	struct simhca_cq *cq = to_scq(ibcq);

	if (attr->flags || attr->cqe < 1 || attr->cqe > SIMHCA_MAX_CQE)
		return -EINVAL;
	cq->ring = kvcalloc(attr->cqe, sizeof(*cq->ring), GFP_KERNEL);
	if (!cq->ring)
		return -ENOMEM;
	spin_lock_init(&cq->lock);
	cq->size = attr->cqe;
	ibcq->cqe = attr->cqe;
	return 0;
}

int simhca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct simhca_cq *cq = to_scq(ibcq);

	if (cq->overflows)
		pr_warn("simhca: cq overflowed %lu times\n", cq->overflows);
	kvfree(cq->ring);
	return 0;
}

int simhca_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct simhca_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num && cq->count) {
		wc[n++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int simhca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct simhca_cq *cq = to_scq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	cq->notify = true;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->count)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

void simhca_cq_complete(struct simhca_cq *cq, const struct ib_wc *wc)
{
	unsigned long flags;
	bool notify = false;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->count == cq->size) {
		cq->overflows++;
		spin_unlock_irqrestore(&cq->lock, flags);
		return;
	}
	cq->ring[(cq->head + cq->count) % cq->size] = *wc;
	cq->count++;
	if (cq->notify) {
		cq->notify = false;
		notify = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}
