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

/* the length of one result line read back from debugfs */
#define LOCALSA_TEST_RESULT_LEN 192

/* a device the ib_client was given */
struct localsa_test_dev {
	struct list_head list;
	struct ib_device *device;
	struct list_head joins;	/* struct localsa_test_join, under the lock */
};

/*
 * One debugfs file: an operation on DEV PORT GID and the result line of its
 * last run.  run() returns 0 when the operation ran (its status is part of
 * the result line) or a negative errno for a request it cannot run.
 */
struct localsa_test_op {
	const char *name;
	int (*run)(struct localsa_test_dev *dev, u32 port,
		   const union ib_gid *gid, char *result, size_t len);
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
extern struct localsa_test_op localsa_test_path_op;
int localsa_test_format_path(char *buf, size_t len, int status,
			     struct sa_path_rec *rec);

/* route.c */
extern struct localsa_test_op localsa_test_route_op;

/* multicast.c */
extern struct localsa_test_op localsa_test_join_op;
extern struct localsa_test_op localsa_test_leave_op;
void localsa_test_leave_all(struct localsa_test_dev *dev);

#endif /* LOCALSA_TEST_H */
