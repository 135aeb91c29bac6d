// SPDX-License-Identifier: GPL-2.0
/*
 * localsa_test: "path", one PathRecord through ib_sa_path_rec_get() from the
 * port's GID 0 to DGID, reversible, one path.
 */
#include <linux/completion.h>

#include "localsa_test.h"

struct localsa_test_path_query {
	struct completion done;
	int status;
	struct sa_path_rec rec;
};

static void localsa_test_path_done(struct localsa_test_path_query *q,
				   int status, struct sa_path_rec *resp)
{
	q->status = status;
	if (!status && resp)
		q->rec = *resp;
	else if (!status)
		q->status = -ENODATA;
	complete(&q->done);
}

/* the count of records is unsigned from 6.2 on (see Kbuild) */
#ifdef LOCALSA_TEST_NUM_PRS_UNSIGNED
static void localsa_test_path_cb(int status, struct sa_path_rec *resp,
				 unsigned int num_prs, void *context)
#else
static void localsa_test_path_cb(int status, struct sa_path_rec *resp,
				 int num_prs, void *context)
#endif
{
	localsa_test_path_done(context, status, resp);
}

int localsa_test_format_path(char *buf, size_t len, int status,
			     struct sa_path_rec *rec)
{
	if (status)
		return scnprintf(buf, len,
				 "status=%d dlid=0 slid=0 sl=0 mtu=0 rate=0 pkt_life=0 pkey=0x0000",
				 status);
	return scnprintf(buf, len,
			 "status=0 dlid=%u slid=%u sl=%u mtu=%u rate=%u pkt_life=%u pkey=0x%04x",
			 be32_to_cpu(sa_path_get_dlid(rec)),
			 be32_to_cpu(sa_path_get_slid(rec)), rec->sl,
			 rec->mtu, rec->rate, rec->packet_life_time,
			 be16_to_cpu(rec->pkey));
}

/* the PathRecord Get of "path": SGID, DGID, reversible, one path */
void localsa_test_path_request(struct localsa_test_dev *dev, u32 port,
			       const union ib_gid *sgid,
			       const union ib_gid *dgid,
			       struct sa_path_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->rec_type = SA_PATH_REC_TYPE_IB;
	rec->sgid = *sgid;
	rec->dgid = *dgid;
	rec->reversible = 1;
	rec->numb_path = 1;
}

static int localsa_test_path_run(struct localsa_test_dev *dev, u32 port,
				 const union ib_gid *dgid,
				 const u32 *args, char *result, size_t len)
{
	struct localsa_test_path_query q = {};
	struct sa_path_rec rec = {};
	struct ib_sa_query *query;
	unsigned long wait;
	ktime_t start;
	int id, n;

	union ib_gid sgid;

	id = rdma_query_gid(dev->device, port, 0, &sgid);
	if (id)
		return id;
	localsa_test_path_request(dev, port, &sgid, dgid, &rec);
	init_completion(&q.done);

	start = ktime_get();
	id = ib_sa_path_rec_get(&localsa_test_sa_client, dev->device, port,
				&rec, LOCALSA_TEST_PATH_MASK,
				localsa_test_timeout_ms, GFP_KERNEL,
				localsa_test_path_cb, &q, &query);
	if (id < 0) {
		q.status = id;
	} else {
		/* ib_sa always calls back; cancel only a query it lost */
		wait = msecs_to_jiffies(localsa_test_timeout_ms + 5000);
		if (!wait_for_completion_timeout(&q.done, wait)) {
			ib_sa_cancel_query(id, query);
			wait_for_completion(&q.done);
		}
	}
	n = localsa_test_format_path(result, len, q.status, &q.rec);
	scnprintf(result + n, len - n, " elapsed_ms=%lld\n",
		  ktime_ms_delta(ktime_get(), start));
	return 0;
}

struct localsa_test_op localsa_test_path_op = {
	.name = "path",
	.run = localsa_test_path_run,
};
