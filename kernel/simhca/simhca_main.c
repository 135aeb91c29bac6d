// SPDX-License-Identifier: GPL-2.0
/*
 * simhca: module setup, one ib_device per instance.
 */
#include <linux/module.h>
#include <linux/slab.h>

#include "simhca.h"

static unsigned int ndev = 1;
module_param(ndev, uint, 0444);
MODULE_PARM_DESC(ndev, "number of simhca devices (1-16, default 1)");

#define SIMHCA_MAX_DEVS 16

static struct simhca_dev *devs[SIMHCA_MAX_DEVS];

static struct simhca_dev *simhca_add(int index)
{
	struct simhca_dev *sdev;
	char name[IB_DEVICE_NAME_MAX];
	int err;

	sdev = ib_alloc_device(simhca_dev, ibdev);
	if (!sdev)
		return ERR_PTR(-ENOMEM);

	sdev->index = index;
	spin_lock_init(&sdev->qp_lock);
	INIT_LIST_HEAD(&sdev->mcast);
	INIT_LIST_HEAD(&sdev->fabric);
	simhca_relay_init(sdev);
	simhca_port_init(sdev);

	sdev->ibdev.node_type = RDMA_NODE_IB_CA;
	sdev->ibdev.phys_port_cnt = 1;
	sdev->ibdev.num_comp_vectors = 1;
	sdev->ibdev.node_guid = sdev->attr.node_guid;
	sdev->ibdev.local_dma_lkey = 0;
	snprintf(sdev->ibdev.node_desc, sizeof(sdev->ibdev.node_desc),
		 "simhca%d", index);
	ib_set_device_ops(&sdev->ibdev, &simhca_dev_ops);

	snprintf(name, sizeof(name), "simhca%d", index);
	/* no DMA device: the core then maps buffers to kernel virtual addresses */
	err = ib_register_device(&sdev->ibdev, name, NULL);
	if (err) {
		ib_dealloc_device(&sdev->ibdev);
		return ERR_PTR(err);
	}

	err = simhca_cdev_register(sdev);
	if (err) {
		ib_unregister_device(&sdev->ibdev);
		ib_dealloc_device(&sdev->ibdev);
		return ERR_PTR(err);
	}
	simhca_fabric_join(sdev);
	return sdev;
}

static void simhca_remove(struct simhca_dev *sdev)
{
	/* no datagram of another device reaches it from here on */
	simhca_fabric_leave(sdev);
	simhca_cdev_unregister(sdev);
	ib_unregister_device(&sdev->ibdev);
	ib_dealloc_device(&sdev->ibdev);
}

static int __init simhca_init(void)
{
	unsigned int i;
	struct simhca_dev *sdev;

	if (ndev < 1 || ndev > SIMHCA_MAX_DEVS)
		return -EINVAL;

	for (i = 0; i < ndev; i++) {
		sdev = simhca_add(i);
		if (IS_ERR(sdev)) {
			pr_err("simhca: device %u: %ld\n", i, PTR_ERR(sdev));
			while (i--)
				simhca_remove(devs[i]);
			return PTR_ERR(sdev);
		}
		devs[i] = sdev;
	}
	pr_info("simhca: %u device(s) registered\n", ndev);
	return 0;
}

static void __exit simhca_exit(void)
{
	unsigned int i;

	for (i = ndev; i--;)
		if (devs[i])
			simhca_remove(devs[i]);
}

module_init(simhca_init);
module_exit(simhca_exit);

MODULE_AUTHOR("localsa");
MODULE_DESCRIPTION("Soft InfiniBand HCA for tests (MADs bridged to a user-space relay)");
MODULE_LICENSE("GPL");
