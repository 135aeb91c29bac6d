// SPDX-License-Identifier: GPL-2.0
/*
 * localsa_test: "join" and "leave", full membership of the port in a
 * multicast group through ib_sa_join_multicast() / ib_sa_free_multicast().
 * A group the join created is left by the leave of the same DEV PORT MGID,
 * when the device goes away, or at unload.
 */
#include <linux/completion.h>
#include <linux/slab.h>

#include "localsa_test.h"

/* Q_Key of the groups this module creates */
#define LOCALSA_TEST_QKEY	0x1e2e

struct localsa_test_join {
	struct list_head list;	/* in localsa_test_dev.joins */
	u32 port;
	union ib_gid mgid;
	struct ib_sa_multicast *mc;
	struct completion done;
	int status;
	u16 mlid;
};

/*
 * Called once with the join's result, and again if the membership is lost
 * later (port events); the membership is freed by the leave either way.
 */
static int localsa_test_join_cb(int status, struct ib_sa_multicast *mc)
{
	struct localsa_test_join *join = mc->context;

	WRITE_ONCE(join->status, status);
	if (!status)
		WRITE_ONCE(join->mlid, be16_to_cpu(mc->rec.mlid));
	complete(&join->done);
	return 0;
}

static struct localsa_test_join *
localsa_test_find_join(struct localsa_test_dev *dev, u32 port,
		       const union ib_gid *mgid)
{
	struct localsa_test_join *join;

	list_for_each_entry(join, &dev->joins, list)
		if (join->port == port && !memcmp(&join->mgid, mgid,
						  sizeof(*mgid)))
			return join;
	return NULL;
}

static int localsa_test_join_send(struct localsa_test_dev *dev,
				  struct localsa_test_join *join)
{
	struct ib_sa_mcmember_rec rec = {};
	u16 pkey;
	int ret;

	ret = rdma_query_gid(dev->device, join->port, 0, &rec.port_gid);
	if (!ret)
		ret = ib_get_cached_pkey(dev->device, join->port, 0, &pkey);
	if (ret)
		return ret;
	rec.mgid = join->mgid;
	rec.qkey = cpu_to_be32(LOCALSA_TEST_QKEY);
	rec.pkey = cpu_to_be16(pkey);
	rec.join_state = 1;	/* full member */

	/* what the SA needs to create the group: Q_Key, P_Key, SL, ... */
	join->mc = ib_sa_join_multicast(&localsa_test_sa_client, dev->device,
					join->port, &rec,
					IB_SA_MCMEMBER_REC_MGID |
					IB_SA_MCMEMBER_REC_PORT_GID |
					IB_SA_MCMEMBER_REC_QKEY |
					IB_SA_MCMEMBER_REC_PKEY |
					IB_SA_MCMEMBER_REC_SL |
					IB_SA_MCMEMBER_REC_FLOW_LABEL |
					IB_SA_MCMEMBER_REC_TRAFFIC_CLASS |
					IB_SA_MCMEMBER_REC_JOIN_STATE,
					GFP_KERNEL, localsa_test_join_cb,
					join);
	return PTR_ERR_OR_ZERO(join->mc);
}

static int localsa_test_join_run(struct localsa_test_dev *dev, u32 port,
				 const union ib_gid *mgid,
				 const u32 *args, char *result, size_t len)
{
	struct localsa_test_join *join;
	int ret;

	if (mgid->raw[0] != 0xff)
		return -EINVAL;
	if (localsa_test_find_join(dev, port, mgid))
		return -EEXIST;
	join = kzalloc(sizeof(*join), GFP_KERNEL);
	if (!join)
		return -ENOMEM;
	join->port = port;
	join->mgid = *mgid;
	init_completion(&join->done);

	ret = localsa_test_join_send(dev, join);
	if (ret) {
		kfree(join);
		return ret;
	}
	/* ib_sa's multicast join gives the SA 3 s and calls back in any case */
	if (!wait_for_completion_timeout(&join->done,
					 msecs_to_jiffies(30000)))
		WRITE_ONCE(join->status, -ETIMEDOUT);
	ret = READ_ONCE(join->status);
	scnprintf(result, len, "status=%d mlid=%u\n", ret,
		  ret ? 0 : READ_ONCE(join->mlid));
	if (ret) {
		ib_sa_free_multicast(join->mc);
		kfree(join);
	} else {
		list_add_tail(&join->list, &dev->joins);
	}
	return 0;
}

static void localsa_test_leave(struct localsa_test_join *join)
{
	list_del(&join->list);
	/* the leave goes to the SA once the port's last member is gone */
	ib_sa_free_multicast(join->mc);
	kfree(join);
}

static int localsa_test_leave_run(struct localsa_test_dev *dev, u32 port,
				  const union ib_gid *mgid,
				  const u32 *args, char *result, size_t len)
{
	struct localsa_test_join *join = localsa_test_find_join(dev, port, mgid);
	u16 mlid;

	if (!join) {
		scnprintf(result, len, "status=%d mlid=0\n", -ENOENT);
		return 0;
	}
	mlid = READ_ONCE(join->mlid);
	localsa_test_leave(join);
	scnprintf(result, len, "status=0 mlid=%u\n", mlid);
	return 0;
}

/* Leave every group joined on @dev.  Called with localsa_test_lock held. */
void localsa_test_leave_all(struct localsa_test_dev *dev)
{
	struct localsa_test_join *join, *tmp;

	lockdep_assert_held(&localsa_test_lock);
	list_for_each_entry_safe(join, tmp, &dev->joins, list)
		localsa_test_leave(join);
}

struct localsa_test_op localsa_test_join_op = {
	.name = "join",
	.run = localsa_test_join_run,
};

struct localsa_test_op localsa_test_leave_op = {
	.name = "leave",
	.run = localsa_test_leave_run,
};
