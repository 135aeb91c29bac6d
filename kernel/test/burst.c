// SPDX-License-Identifier: GPL-2.0
/*
 * localsa_test: stress operations.
 *
 * "path_burst" DEV PORT DGID COUNT [CANCEL_MS [STEP]]: COUNT PathRecord Gets
 * (as "path") in flight at once; with CANCEL_MS, every query still running
 * that long after the last was sent is cancelled (ib_sa_cancel_query(), as
 * rdma_cm does when an id is destroyed).  Every query must call back once:
 * with 0 or, if cancelled, -EINTR.  The result has the first answer, as
 * "path" prints it, and how many answers differ from it ("differ").  With
 * STEP, query i asks for DGID's interface ID plus i * STEP: COUNT
 * destinations at once, as an all-to-all job start asks (no "differ").
 *
 * "route_burst" DEV PORT DGID COUNT [DESTROY_MS [STEP]]: COUNT rdma_cm ids
 * resolve an address and a route at once; with DESTROY_MS, every id is
 * destroyed that long after the last started, whether its route resolved or
 * not.  With STEP, id i resolves DGID's interface ID plus i * STEP.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>

#include "localsa_test.h"

#define LOCALSA_TEST_BURST_MAX	4096

/* what a burst counts */
struct localsa_test_burst {
	spinlock_t lock;	/* the counts and pending */
	struct completion done;
	unsigned int pending;
	unsigned int ok, eintr, etimedout, other;
	int other_status;	/* the last status counted in other */
	s64 max_us, sum_us;
	unsigned int differ;	/* answers unlike the first */
	bool spread;		/* members ask different destinations */
	char first[96];		/* the first answer, as "path" prints it */
};

static void localsa_test_burst_init(struct localsa_test_burst *b,
				    unsigned int count)
{
	memset(b, 0, sizeof(*b));
	spin_lock_init(&b->lock);
	init_completion(&b->done);
	b->pending = count;
}

static void localsa_test_burst_count(struct localsa_test_burst *b, int status,
				     ktime_t start)
{
	s64 us = ktime_us_delta(ktime_get(), start);
	unsigned long flags;

	spin_lock_irqsave(&b->lock, flags);
	if (!status) {
		b->ok++;
	} else if (status == -EINTR) {
		b->eintr++;
	} else if (status == -ETIMEDOUT) {
		b->etimedout++;
	} else {
		b->other++;
		b->other_status = status;
	}
	b->max_us = max(b->max_us, us);
	b->sum_us += us;
	if (!--b->pending)
		complete(&b->done);
	spin_unlock_irqrestore(&b->lock, flags);
}

/*
 * Wait for every member of the burst; the result line.  Members that never
 * finish are reported as lost and their memory is leaked on purpose: the
 * kernel may still call them back.  Returns false if any was lost.
 */
static bool localsa_test_burst_wait(struct localsa_test_burst *b,
				    unsigned int count, ktime_t start,
				    char *result, size_t len)
{
	unsigned long wait = msecs_to_jiffies(2 * localsa_test_timeout_ms +
					      30000);
	unsigned int lost, done;

	wait_for_completion_timeout(&b->done, wait);
	spin_lock_irq(&b->lock);
	lost = b->pending;
	done = count - lost;
	scnprintf(result, len,
		  "count=%u ok=%u eintr=%u etimedout=%u other=%u other_status=%d lost=%u max_ms=%lld mean_ms=%lld elapsed_ms=%lld differ=%u%s%s\n",
		  count, b->ok, b->eintr, b->etimedout, b->other,
		  b->other_status, lost, div_s64(b->max_us, 1000),
		  done ? div_s64(b->sum_us, 1000 * (s64)done) : 0,
		  ktime_ms_delta(ktime_get(), start), b->differ,
		  b->first[0] ? " " : "", b->first);
	spin_unlock_irq(&b->lock);
	return !lost;
}

struct localsa_test_path_member {
	struct localsa_test_burst *burst;
	struct ib_sa_query *query;
	ktime_t start;
	int id;
};

#ifdef LOCALSA_TEST_NUM_PRS_UNSIGNED
static void localsa_test_path_member_cb(int status, struct sa_path_rec *resp,
					unsigned int num_prs, void *context)
#else
static void localsa_test_path_member_cb(int status, struct sa_path_rec *resp,
					int num_prs, void *context)
#endif
{
	struct localsa_test_path_member *m = context;

	struct localsa_test_burst *b = m->burst;
	unsigned long flags;
	char rec[96];

	if (!status && !resp)
		status = -ENODATA;
	if (!status) {
		/* every member asks the same: every answer must be the same */
		localsa_test_format_path(rec, sizeof(rec), 0, resp);
		spin_lock_irqsave(&b->lock, flags);
		if (!b->first[0])
			strscpy(b->first, rec, sizeof(b->first));
		else if (!b->spread && strcmp(b->first, rec))
			b->differ++;
		spin_unlock_irqrestore(&b->lock, flags);
	}
	localsa_test_burst_count(b, status, m->start);
}

static int localsa_test_path_burst_run(struct localsa_test_dev *dev, u32 port,
				       const union ib_gid *dgid,
				       const u32 *args, char *result,
				       size_t len)
{
	struct localsa_test_path_member *members;
	struct localsa_test_burst *burst;
	unsigned int count = args[0], i;
	u64 dguid = be64_to_cpu(dgid->global.interface_id);
	struct sa_path_rec rec;
	union ib_gid sgid;
	ktime_t start;
	int ret;

	if (!count || count > LOCALSA_TEST_BURST_MAX)
		return -EINVAL;
	ret = rdma_query_gid(dev->device, port, 0, &sgid);
	if (ret)
		return ret;
	burst = kmalloc(sizeof(*burst), GFP_KERNEL);
	members = kcalloc(count, sizeof(*members), GFP_KERNEL);
	if (!burst || !members) {
		kfree(burst);
		kfree(members);
		return -ENOMEM;
	}
	localsa_test_burst_init(burst, count);
	burst->spread = args[2];
	localsa_test_path_request(dev, port, &sgid, dgid, &rec);

	start = ktime_get();
	for (i = 0; i < count; i++) {
		/* the request is copied into the MAD at once: rec may change */
		rec.dgid.global.interface_id =
			cpu_to_be64(dguid + (u64)i * args[2]);
		members[i].burst = burst;
		members[i].start = ktime_get();
		members[i].id = ib_sa_path_rec_get(&localsa_test_sa_client,
						   dev->device, port, &rec,
						   LOCALSA_TEST_PATH_MASK,
						   localsa_test_timeout_ms,
						   GFP_KERNEL,
						   localsa_test_path_member_cb,
						   &members[i],
						   &members[i].query);
		/* not sent: no call back */
		if (members[i].id < 0)
			localsa_test_burst_count(burst, members[i].id,
						 members[i].start);
	}
	if (args[1]) {
		msleep(args[1]);
		/* safe on a query that completed: ib_sa looks the id up */
		for (i = 0; i < count; i++)
			if (members[i].id >= 0)
				ib_sa_cancel_query(members[i].id,
						   members[i].query);
	}
	if (localsa_test_burst_wait(burst, count, start, result, len)) {
		kfree(members);
		kfree(burst);
	}
	return 0;
}

struct localsa_test_op localsa_test_path_burst_op = {
	.name = "path_burst",
	.nargs = 3,
	.run = localsa_test_path_burst_run,
};

struct localsa_test_route_member {
	struct localsa_test_burst *burst;
	struct rdma_cm_id *id;
	ktime_t start;
	bool counted;	/* under the burst's lock */
};

/* count a member once: its route resolved or failed, or it was destroyed */
static void localsa_test_route_member_done(struct localsa_test_route_member *m,
					   int status)
{
	unsigned long flags;
	bool first;

	spin_lock_irqsave(&m->burst->lock, flags);
	first = !m->counted;
	m->counted = true;
	spin_unlock_irqrestore(&m->burst->lock, flags);
	if (first)
		localsa_test_burst_count(m->burst, status, m->start);
}

static int localsa_test_route_member_handler(struct rdma_cm_id *id,
					     struct rdma_cm_event *event)
{
	struct localsa_test_route_member *m = id->context;
	int ret;

	switch (event->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, localsa_test_timeout_ms);
		if (ret)
			localsa_test_route_member_done(m, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		localsa_test_route_member_done(m, 0);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		localsa_test_route_member_done(m, event->status ?
					       event->status : -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		localsa_test_route_member_done(m, -ENODEV);
		break;
	default:
		break;
	}
	/* the ids are destroyed by localsa_test_route_burst_run() */
	return 0;
}

static int localsa_test_route_burst_run(struct localsa_test_dev *dev,
					u32 port, const union ib_gid *dgid,
					const u32 *args, char *result,
					size_t len)
{
	struct localsa_test_route_member *members;
	struct localsa_test_burst *burst;
	unsigned int count = args[0], i;
	u64 dguid = be64_to_cpu(dgid->global.interface_id);
	struct sockaddr_ib src, dst;
	union ib_gid sgid, member_dgid = *dgid;
	ktime_t start;
	int ret;

	if (!count || count > LOCALSA_TEST_BURST_MAX)
		return -EINVAL;
	ret = rdma_query_gid(dev->device, port, 0, &sgid);
	if (ret)
		return ret;
	burst = kmalloc(sizeof(*burst), GFP_KERNEL);
	members = kcalloc(count, sizeof(*members), GFP_KERNEL);
	if (!burst || !members) {
		kfree(burst);
		kfree(members);
		return -ENOMEM;
	}
	localsa_test_burst_init(burst, count);
	localsa_test_sib(&src, &sgid, 0);

	start = ktime_get();
	for (i = 0; i < count; i++) {
		struct localsa_test_route_member *m = &members[i];

		/* rdma_resolve_addr() copies the address: dst may change */
		member_dgid.global.interface_id =
			cpu_to_be64(dguid + (u64)i * args[2]);
		localsa_test_sib(&dst, &member_dgid, LOCALSA_TEST_ROUTE_SID);

		m->burst = burst;
		m->start = ktime_get();
		m->id = rdma_create_id(&init_net,
				       localsa_test_route_member_handler, m,
				       RDMA_PS_IB, IB_QPT_RC);
		if (IS_ERR(m->id)) {
			localsa_test_route_member_done(m, PTR_ERR(m->id));
			m->id = NULL;
			continue;
		}
		ret = rdma_resolve_addr(m->id, (struct sockaddr *)&src,
					(struct sockaddr *)&dst,
					localsa_test_timeout_ms);
		if (ret)
			localsa_test_route_member_done(m, ret);
	}
	if (args[1]) {
		msleep(args[1]);
		/* mid-resolve: rdma_cm cancels the SA query of the id */
		for (i = 0; i < count; i++) {
			if (!members[i].id)
				continue;
			rdma_destroy_id(members[i].id);
			members[i].id = NULL;
			localsa_test_route_member_done(&members[i], -EINTR);
		}
	}
	localsa_test_burst_wait(burst, count, start, result, len);
	/* with every id destroyed, no handler runs any more */
	for (i = 0; i < count; i++)
		if (members[i].id)
			rdma_destroy_id(members[i].id);
	kfree(members);
	kfree(burst);
	return 0;
}

struct localsa_test_op localsa_test_route_burst_op = {
	.name = "route_burst",
	.nargs = 3,
	.run = localsa_test_route_burst_run,
};
