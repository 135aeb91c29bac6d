// SPDX-License-Identifier: GPL-2.0
/*
 * simhca: /dev/simhcaN, the relay's end. read() returns one queued
 * struct simhca_msg (MADs the port sent, CapabilityMask changes); write()
 * takes one (a MAD that arrived, the port's attributes). One opener at a time;
 * when it closes, the port goes down.
 */
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "simhca.h"

void simhca_relay_queue(struct simhca_dev *sdev, const struct simhca_msg *msg)
{
	struct simhca_pending *p;
	unsigned long flags;

	spin_lock_irqsave(&sdev->tx_lock, flags);
	if (!sdev->relay_open || sdev->tx_len >= SIMHCA_RELAY_QUEUE) {
		sdev->tx_dropped++;
		spin_unlock_irqrestore(&sdev->tx_lock, flags);
		return;
	}
	spin_unlock_irqrestore(&sdev->tx_lock, flags);

	p = kmalloc(sizeof(*p), GFP_ATOMIC);
	if (!p)
		return;
	p->msg = *msg;

	spin_lock_irqsave(&sdev->tx_lock, flags);
	list_add_tail(&p->list, &sdev->tx_queue);
	sdev->tx_len++;
	spin_unlock_irqrestore(&sdev->tx_lock, flags);
	wake_up_interruptible(&sdev->tx_wait);
}

static void simhca_tx_purge(struct simhca_dev *sdev)
{
	struct simhca_pending *p, *tmp;
	unsigned long flags;
	LIST_HEAD(list);

	spin_lock_irqsave(&sdev->tx_lock, flags);
	list_splice_init(&sdev->tx_queue, &list);
	sdev->tx_len = 0;
	spin_unlock_irqrestore(&sdev->tx_lock, flags);
	list_for_each_entry_safe(p, tmp, &list, list)
		kfree(p);
}

static struct simhca_dev *file_sdev(struct file *file)
{
	struct miscdevice *misc = file->private_data;

	return container_of(misc, struct simhca_dev, misc);
}

static int simhca_open(struct inode *inode, struct file *file)
{
	struct simhca_dev *sdev = file_sdev(file);
	struct simhca_msg msg = { .type = SIMHCA_MSG_CAPMASK };
	unsigned long flags;
	int ret = 0;

	mutex_lock(&sdev->relay_mutex);
	if (sdev->relay_open) {
		ret = -EBUSY;
	} else {
		spin_lock_irqsave(&sdev->tx_lock, flags);
		sdev->relay_open = true;
		spin_unlock_irqrestore(&sdev->tx_lock, flags);
	}
	mutex_unlock(&sdev->relay_mutex);
	if (ret)
		return ret;

	/* tell the new relay which capability bits are set locally */
	spin_lock_irqsave(&sdev->attr_lock, flags);
	msg.capmask.local_cap_mask = sdev->local_cap_mask;
	spin_unlock_irqrestore(&sdev->attr_lock, flags);
	simhca_relay_queue(sdev, &msg);
	return nonseekable_open(inode, file);
}

static int simhca_release(struct inode *inode, struct file *file)
{
	struct simhca_dev *sdev = file_sdev(file);
	unsigned long flags;

	mutex_lock(&sdev->relay_mutex);
	spin_lock_irqsave(&sdev->tx_lock, flags);
	sdev->relay_open = false;
	spin_unlock_irqrestore(&sdev->tx_lock, flags);
	simhca_tx_purge(sdev);
	simhca_port_down(sdev);
	mutex_unlock(&sdev->relay_mutex);
	return 0;
}

static ssize_t simhca_read(struct file *file, char __user *buf, size_t count,
			   loff_t *ppos)
{
	struct simhca_dev *sdev = file_sdev(file);
	struct simhca_pending *p = NULL;
	unsigned long flags;
	int ret;

	if (count < sizeof(p->msg))
		return -EINVAL;

	for (;;) {
		spin_lock_irqsave(&sdev->tx_lock, flags);
		if (!list_empty(&sdev->tx_queue)) {
			p = list_first_entry(&sdev->tx_queue,
					     struct simhca_pending, list);
			list_del(&p->list);
			sdev->tx_len--;
		}
		spin_unlock_irqrestore(&sdev->tx_lock, flags);
		if (p)
			break;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(sdev->tx_wait,
					       !list_empty(&sdev->tx_queue));
		if (ret)
			return ret;
	}

	ret = copy_to_user(buf, &p->msg, sizeof(p->msg)) ? -EFAULT :
							    sizeof(p->msg);
	kfree(p);
	return ret;
}

static ssize_t simhca_write(struct file *file, const char __user *buf,
			    size_t count, loff_t *ppos)
{
	struct simhca_dev *sdev = file_sdev(file);
	struct simhca_msg *msg;
	ssize_t ret = count;

	if (count != sizeof(*msg))
		return -EINVAL;
	msg = kmalloc(sizeof(*msg), GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	if (copy_from_user(msg, buf, sizeof(*msg))) {
		ret = -EFAULT;
		goto out;
	}

	switch (msg->type) {
	case SIMHCA_MSG_MAD:
		if (msg->mad.length > SIMHCA_MAD_SIZE || msg->mad.dqpn > 1) {
			ret = -EINVAL;
			break;
		}
		simhca_deliver(sdev, &msg->mad);
		break;
	case SIMHCA_MSG_PORT:
		if (msg->port.state < IB_PORT_DOWN ||
		    msg->port.state > IB_PORT_ACTIVE_DEFER ||
		    msg->port.lmc > 7) {
			ret = -EINVAL;
			break;
		}
		simhca_port_update(sdev, &msg->port, msg->flags);
		break;
	default:
		ret = -EINVAL;
	}
out:
	kfree(msg);
	return ret;
}

static __poll_t simhca_poll(struct file *file, poll_table *wait)
{
	struct simhca_dev *sdev = file_sdev(file);
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;

	poll_wait(file, &sdev->tx_wait, wait);
	if (!list_empty_careful(&sdev->tx_queue))
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

static const struct file_operations simhca_fops = {
	.owner = THIS_MODULE,
	.open = simhca_open,
	.release = simhca_release,
	.read = simhca_read,
	.write = simhca_write,
	.poll = simhca_poll,
};

/*
 * The relay's queue exists before the device is registered: registering it
 * already sends (ib_cm sets port capabilities through simhca_modify_port()).
 */
void simhca_relay_init(struct simhca_dev *sdev)
{
	mutex_init(&sdev->relay_mutex);
	spin_lock_init(&sdev->tx_lock);
	INIT_LIST_HEAD(&sdev->tx_queue);
	init_waitqueue_head(&sdev->tx_wait);
}

int simhca_cdev_register(struct simhca_dev *sdev)
{
	snprintf(sdev->misc_name, sizeof(sdev->misc_name), "simhca%d",
		 sdev->index);
	sdev->misc.minor = MISC_DYNAMIC_MINOR;
	sdev->misc.name = sdev->misc_name;
	sdev->misc.fops = &simhca_fops;
	sdev->misc.mode = 0600;
	return misc_register(&sdev->misc);
}

void simhca_cdev_unregister(struct simhca_dev *sdev)
{
	misc_deregister(&sdev->misc);
	simhca_tx_purge(sdev);
}
