// SPDX-License-Identifier: GPL-2.0
/*
 * localsa_test: module set-up, the ib_client that tracks the RDMA devices and
 * the ib_sa_client every SA query of the module is made for.
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "localsa_test.h"

MODULE_DESCRIPTION("localsa kernel SA consumer test module");
MODULE_LICENSE("GPL");

unsigned int localsa_test_timeout_ms = 1000;
module_param_named(timeout_ms, localsa_test_timeout_ms, uint, 0644);
MODULE_PARM_DESC(timeout_ms,
		 "caller timeout of path and route queries in ms (default 1000)");

/* the device list, the joins and the results of the debugfs files */
DEFINE_MUTEX(localsa_test_lock);
struct ib_sa_client localsa_test_sa_client;
static LIST_HEAD(localsa_test_devs);

static int localsa_test_add_one(struct ib_device *device);
static void localsa_test_remove_one(struct ib_device *device,
				    void *client_data);

static struct ib_client localsa_test_client = {
	.name = "localsa_test",
	.add = localsa_test_add_one,
	.remove = localsa_test_remove_one,
};

static int localsa_test_add_one(struct ib_device *device)
{
	struct localsa_test_dev *dev;
	bool has_sa = false;
	u32 port;

	rdma_for_each_port(device, port)
		has_sa |= rdma_cap_ib_sa(device, port);
	if (!has_sa)
		return -EOPNOTSUPP;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	dev->device = device;
	INIT_LIST_HEAD(&dev->joins);

	mutex_lock(&localsa_test_lock);
	list_add_tail(&dev->list, &localsa_test_devs);
	mutex_unlock(&localsa_test_lock);
	ib_set_client_data(device, &localsa_test_client, dev);
	return 0;
}

static void localsa_test_remove_one(struct ib_device *device,
				    void *client_data)
{
	struct localsa_test_dev *dev = client_data;

	mutex_lock(&localsa_test_lock);
	localsa_test_leave_all(dev);
	list_del(&dev->list);
	mutex_unlock(&localsa_test_lock);
	kfree(dev);
}

/* The device named @name, or NULL.  Called with localsa_test_lock held. */
struct localsa_test_dev *localsa_test_find_dev(const char *name)
{
	struct localsa_test_dev *dev;

	lockdep_assert_held(&localsa_test_lock);
	list_for_each_entry(dev, &localsa_test_devs, list)
		if (!strcmp(dev_name(&dev->device->dev), name))
			return dev;
	return NULL;
}

static int __init localsa_test_init(void)
{
	int ret;

	ib_sa_register_client(&localsa_test_sa_client);
	ret = ib_register_client(&localsa_test_client);
	if (ret)
		goto err_sa;
	ret = localsa_test_debugfs_init();
	if (ret)
		goto err_client;
	return 0;

err_client:
	ib_unregister_client(&localsa_test_client);
err_sa:
	ib_sa_unregister_client(&localsa_test_sa_client);
	return ret;
}

static void __exit localsa_test_exit(void)
{
	/* no new requests; waits for the ones running */
	localsa_test_debugfs_cleanup();
	/* leaves every group still joined */
	ib_unregister_client(&localsa_test_client);
	/* waits for the SA queries still held by ib_sa */
	ib_sa_unregister_client(&localsa_test_sa_client);
}

module_init(localsa_test_init);
module_exit(localsa_test_exit);
