/* SPDX-License-Identifier: GPL-2.0 */
/*
 * localsa_test: a kernel consumer of the SA through the real APIs
 * (ib_sa_path_rec_get, rdma_cm route resolution, ib_sa_join_multicast),
 * driven through debugfs, for the localsa end-to-end tests.
 */
#ifndef LOCALSA_TEST_H
#define LOCALSA_TEST_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_sa.h>
#include <rdma/ib.h>

/* the length of one result line read back from debugfs */
#define LOCALSA_TEST_RESULT_LEN 192

/* a device the ib_client was given */
struct localsa_test_dev {
	struct list_head list;
	struct ib_device *device;
	struct list_head joins;	/* struct localsa_test_join, under the lock */
};

/* at most this many numbers after DEV PORT GID */
#define LOCALSA_TEST_MAX_ARGS 3

/*
 * One debugfs file: an operation on DEV PORT GID [N...] and the result line
 * of its last run.  run() returns 0 when the operation ran (its status is
 * part of the result line) or a negative errno for a request it cannot run.
 * @nargs is how many numbers the operation takes (missing ones are 0).
 */
struct localsa_test_op {
	const char *name;
	int nargs;
	int (*run)(struct localsa_test_dev *dev, u32 port,
		   const union ib_gid *gid, const u32 *args, char *result,
		   size_t len);
	char result[LOCALSA_TEST_RESULT_LEN];
};

/* main.c */
extern struct mutex localsa_test_lock;	/* devices, joins, results */
extern struct ib_sa_client localsa_test_sa_client;
extern unsigned int localsa_test_timeout_ms;
struct localsa_test_dev *localsa_test_find_dev(const char *name);

/* debugfs.c */
int localsa_test_debugfs_init(void);
void localsa_test_debugfs_cleanup(void);

/* path.c */
#define LOCALSA_TEST_PATH_MASK (IB_SA_PATH_REC_DGID | IB_SA_PATH_REC_SGID | \
				IB_SA_PATH_REC_REVERSIBLE | \
				IB_SA_PATH_REC_NUMB_PATH)
void localsa_test_path_request(struct localsa_test_dev *dev, u32 port,
			       const union ib_gid *sgid,
			       const union ib_gid *dgid,
			       struct sa_path_rec *rec);
extern struct localsa_test_op localsa_test_path_op;
int localsa_test_format_path(char *buf, size_t len, int status,
			     struct sa_path_rec *rec);

/* route.c */
/* the destination's service ID: the IB port space, port 0x1e2e */
#define LOCALSA_TEST_ROUTE_SID	(RDMA_IB_IP_PS_IB | 0x1e2e)
void localsa_test_sib(struct sockaddr_ib *sib, const union ib_gid *gid,
		      u64 sid);
extern struct localsa_test_op localsa_test_route_op;

/* burst.c */
extern struct localsa_test_op localsa_test_path_burst_op;
extern struct localsa_test_op localsa_test_route_burst_op;

/* multicast.c */
extern struct localsa_test_op localsa_test_join_op;
extern struct localsa_test_op localsa_test_leave_op;
void localsa_test_leave_all(struct localsa_test_dev *dev);

#endif /* LOCALSA_TEST_H */
