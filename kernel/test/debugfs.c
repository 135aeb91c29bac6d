// SPDX-License-Identifier: GPL-2.0
/*
 * localsa_test: the debugfs interface.  /sys/kernel/debug/localsa_test/ has
 * one file per operation; writing "DEV PORT GID" runs it and reading returns
 * the result line of the last run.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/inet.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "localsa_test.h"

#define LOCALSA_TEST_REQUEST_MAX 128

static struct dentry *localsa_test_dir;

static struct localsa_test_op *localsa_test_ops[] = {
	&localsa_test_path_op,
	&localsa_test_route_op,
	&localsa_test_join_op,
	&localsa_test_leave_op,
	&localsa_test_path_burst_op,
	&localsa_test_route_burst_op,
};

/* "DEV PORT GID [N...]", the GID in IPv6 notation (fe80::2) */
static int localsa_test_parse(char *req, char *devname, size_t devlen,
			      u32 *port, union ib_gid *gid, u32 *args,
			      int nargs)
{
	char *dev_tok, *port_tok, *gid_tok, *arg;
	const char *end;
	int i;

	req = skip_spaces(strim(req));
	dev_tok = strsep(&req, " \t");
	req = req ? skip_spaces(req) : NULL;
	port_tok = req ? strsep(&req, " \t") : NULL;
	req = req ? skip_spaces(req) : NULL;
	gid_tok = req ? strsep(&req, " \t") : NULL;
	if (!dev_tok || !port_tok || !gid_tok || !*gid_tok)
		return -EINVAL;
	if (strscpy(devname, dev_tok, devlen) < 0)
		return -EINVAL;
	if (kstrtou32(port_tok, 0, port))
		return -EINVAL;
	if (!in6_pton(gid_tok, -1, gid->raw, -1, &end) || *end)
		return -EINVAL;
	for (i = 0; i < LOCALSA_TEST_MAX_ARGS; i++) {
		args[i] = 0;
		req = req ? skip_spaces(req) : NULL;
		arg = req && *req ? strsep(&req, " \t") : NULL;
		if (!arg)
			continue;
		if (i >= nargs || kstrtou32(arg, 0, &args[i]))
			return -EINVAL;
	}
	return req && *skip_spaces(req) ? -EINVAL : 0;
}

static ssize_t localsa_test_write(struct file *file, const char __user *ubuf,
				  size_t count, loff_t *ppos)
{
	struct localsa_test_op *op = file->private_data;
	char req[LOCALSA_TEST_REQUEST_MAX];
	char devname[IB_DEVICE_NAME_MAX];
	u32 args[LOCALSA_TEST_MAX_ARGS];
	struct localsa_test_dev *dev;
	union ib_gid gid;
	u32 port;
	int ret;

	if (count >= sizeof(req))
		return -EINVAL;
	if (copy_from_user(req, ubuf, count))
		return -EFAULT;
	req[count] = '\0';
	ret = localsa_test_parse(req, devname, sizeof(devname), &port, &gid,
				 args, op->nargs);
	if (ret)
		return ret;

	mutex_lock(&localsa_test_lock);
	dev = localsa_test_find_dev(devname);
	if (!dev)
		ret = -ENODEV;
	else if (!rdma_is_port_valid(dev->device, port) ||
		 !rdma_cap_ib_sa(dev->device, port))
		ret = -EINVAL;
	else
		ret = op->run(dev, port, &gid, args, op->result,
			      sizeof(op->result));
	mutex_unlock(&localsa_test_lock);
	return ret ? ret : count;
}

static ssize_t localsa_test_read(struct file *file, char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	struct localsa_test_op *op = file->private_data;
	char result[LOCALSA_TEST_RESULT_LEN];

	mutex_lock(&localsa_test_lock);
	strscpy(result, op->result, sizeof(result));
	mutex_unlock(&localsa_test_lock);
	return simple_read_from_buffer(ubuf, count, ppos, result,
				       strlen(result));
}

static const struct file_operations localsa_test_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = localsa_test_read,
	.write = localsa_test_write,
	.llseek = default_llseek,
};

int localsa_test_debugfs_init(void)
{
	int i;

	localsa_test_dir = debugfs_create_dir("localsa_test", NULL);
	if (IS_ERR(localsa_test_dir))
		return PTR_ERR(localsa_test_dir);
	for (i = 0; i < ARRAY_SIZE(localsa_test_ops); i++) {
		struct localsa_test_op *op = localsa_test_ops[i];

		snprintf(op->result, sizeof(op->result), "status=%d\n",
			 -ENODATA);
		debugfs_create_file(op->name, 0600, localsa_test_dir, op,
				    &localsa_test_fops);
	}
	return 0;
}

void localsa_test_debugfs_cleanup(void)
{
	debugfs_remove_recursive(localsa_test_dir);
}
