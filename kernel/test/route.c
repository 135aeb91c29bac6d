// SPDX-License-Identifier: GPL-2.0
/*
 * localsa_test: "route", the same PathRecord through rdma_cm: an RDMA_PS_IB
 * id bound to the port's GID 0 resolves an AF_IB address and its route.
 */
#include <linux/completion.h>
#include <linux/ktime.h>
#include <linux/socket.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>

#include "localsa_test.h"

struct localsa_test_route {
	struct completion done;
	int status;
};

static int localsa_test_route_handler(struct rdma_cm_id *id,
				      struct rdma_cm_event *event)
{
	struct localsa_test_route *r = id->context;

	switch (event->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		r->status = 0;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		r->status = event->status ? event->status : -EHOSTUNREACH;
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		r->status = -ENODEV;
		break;
	default:
		return 0;
	}
	complete(&r->done);
	/* the id is destroyed by localsa_test_route_run() */
	return 0;
}

void localsa_test_sib(struct sockaddr_ib *sib, const union ib_gid *gid,
		      u64 sid)
{
	memset(sib, 0, sizeof(*sib));
	sib->sib_family = AF_IB;
	sib->sib_pkey = cpu_to_be16(0xffff);
	memcpy(&sib->sib_addr, gid, sizeof(*gid));
	sib->sib_sid = cpu_to_be64(sid);
	sib->sib_sid_mask = cpu_to_be64(sid ? ~0ULL : 0);
}

/* wait for the next event; -ETIMEDOUT if rdma_cm never sends one */
static int localsa_test_route_wait(struct localsa_test_route *r)
{
	unsigned long wait = msecs_to_jiffies(localsa_test_timeout_ms + 5000);

	if (!wait_for_completion_timeout(&r->done, wait))
		return -ETIMEDOUT;
	reinit_completion(&r->done);
	return r->status;
}

static int localsa_test_route_resolve(struct rdma_cm_id *id,
				      struct localsa_test_route *r,
				      const union ib_gid *sgid,
				      const union ib_gid *dgid)
{
	struct sockaddr_ib src, dst;
	int ret;

	localsa_test_sib(&src, sgid, 0);
	localsa_test_sib(&dst, dgid, LOCALSA_TEST_ROUTE_SID);
	ret = rdma_resolve_addr(id, (struct sockaddr *)&src,
				(struct sockaddr *)&dst,
				localsa_test_timeout_ms);
	if (!ret)
		ret = localsa_test_route_wait(r);
	if (!ret)
		ret = rdma_resolve_route(id, localsa_test_timeout_ms);
	if (!ret)
		ret = localsa_test_route_wait(r);
	return ret;
}

static int localsa_test_route_run(struct localsa_test_dev *dev, u32 port,
				  const union ib_gid *dgid,
				  const u32 *args, char *result, size_t len)
{
	struct localsa_test_route r = {};
	struct sa_path_rec *rec = NULL;
	struct rdma_cm_id *id;
	union ib_gid sgid;
	ktime_t start;
	int ret, n;

	ret = rdma_query_gid(dev->device, port, 0, &sgid);
	if (ret)
		return ret;
	init_completion(&r.done);
	id = rdma_create_id(&init_net, localsa_test_route_handler, &r,
			    RDMA_PS_IB, IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);

	start = ktime_get();
	ret = localsa_test_route_resolve(id, &r, &sgid, dgid);
	/* the source GID must have bound the id to the port asked for */
	if (!ret && (id->device != dev->device || id->port_num != port))
		ret = -EXDEV;
	if (!ret && id->route.num_pri_alt_paths < 1)
		ret = -ENODATA;
	if (!ret)
		rec = &id->route.path_rec[0];
	n = localsa_test_format_path(result, len, ret, rec);
	scnprintf(result + n, len - n, " elapsed_ms=%lld\n",
		  ktime_ms_delta(ktime_get(), start));
	rdma_destroy_id(id);
	return 0;
}

struct localsa_test_op localsa_test_route_op = {
	.name = "route",
	.run = localsa_test_route_run,
};
