// SPDX-License-Identifier: GPL-2.0
/*
 * simhca: port attributes. The relay mirrors them from the fabric; every
 * change raises the event a real HCA raises for it.
 */
#include "simhca.h"

#define SIMHCA_DEFAULT_GUID	0x0002c90300a00000ULL

void simhca_port_init(struct simhca_dev *sdev)
{
	struct simhca_port *a = &sdev->attr;

	spin_lock_init(&sdev->attr_lock);
	memset(a, 0, sizeof(*a));
	a->node_guid = cpu_to_be64(SIMHCA_DEFAULT_GUID + 0x100 * sdev->index);
	a->port_guid = cpu_to_be64(SIMHCA_DEFAULT_GUID + 0x100 * sdev->index + 1);
	a->subnet_prefix = cpu_to_be64(0xfe80000000000000ULL);
	a->cap_mask = IB_PORT_SYS_IMAGE_GUID_SUP | IB_PORT_CLIENT_REG_SUP;
	a->state = IB_PORT_DOWN;
	a->phys_state = IB_PORT_PHYS_STATE_POLLING;
	a->active_width = IB_WIDTH_4X;
	a->active_speed = IB_SPEED_SDR;
	a->active_mtu = IB_MTU_2048;
	a->max_mtu = IB_MTU_4096;
	a->subnet_timeout = 18;
	a->max_vl_num = 1;
	a->pkeys[0] = 0xffff;
	sdev->local_cap_mask = 0;
}

bool simhca_lid_is_local(struct simhca_dev *sdev, u16 dlid, u16 *lid)
{
	unsigned long flags;
	bool local;
	u16 base;

	spin_lock_irqsave(&sdev->attr_lock, flags);
	base = sdev->attr.lid;
	local = sdev->attr.state == IB_PORT_ACTIVE && base &&
		dlid < 0xc000 &&
		(dlid & ~((1U << sdev->attr.lmc) - 1)) == base;
	spin_unlock_irqrestore(&sdev->attr_lock, flags);
	if (lid)
		*lid = base;
	return local;
}

static void simhca_event(struct simhca_dev *sdev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &sdev->ibdev,
		.event = type,
		.element.port_num = 1,
	};

	/* tests follow the events in the kernel log */
	ibdev_info(&sdev->ibdev, "port 1: %s\n", ib_event_msg(type));
	ib_dispatch_event(&ev);
}

/* relay -> driver: new attributes, events for what changed */
void simhca_port_update(struct simhca_dev *sdev, const struct simhca_port *p,
			u32 flags)
{
	struct simhca_port old;
	unsigned long irqflags;
	bool was_active, is_active;

	spin_lock_irqsave(&sdev->attr_lock, irqflags);
	old = sdev->attr;
	sdev->attr = *p;
	sdev->ibdev.node_guid = p->node_guid;
	sdev->ibdev.attrs.sys_image_guid = p->node_guid;
	spin_unlock_irqrestore(&sdev->attr_lock, irqflags);

	was_active = old.state == IB_PORT_ACTIVE;
	is_active = p->state == IB_PORT_ACTIVE;

	if (old.lid != p->lid || old.lmc != p->lmc)
		simhca_event(sdev, IB_EVENT_LID_CHANGE);
	if (old.sm_lid != p->sm_lid || old.sm_sl != p->sm_sl)
		simhca_event(sdev, IB_EVENT_SM_CHANGE);
	if (memcmp(old.pkeys, p->pkeys, sizeof(p->pkeys)))
		simhca_event(sdev, IB_EVENT_PKEY_CHANGE);
	if (old.subnet_prefix != p->subnet_prefix ||
	    old.port_guid != p->port_guid)
		simhca_event(sdev, IB_EVENT_GID_CHANGE);
	if (!was_active && is_active)
		simhca_event(sdev, IB_EVENT_PORT_ACTIVE);
	else if (was_active && !is_active)
		simhca_event(sdev, IB_EVENT_PORT_ERR);
	if (flags & SIMHCA_PORT_F_CLIENT_REREG)
		simhca_event(sdev, IB_EVENT_CLIENT_REREGISTER);
}

/* the relay went away: the link is down */
void simhca_port_down(struct simhca_dev *sdev)
{
	struct simhca_port p;
	unsigned long flags;

	spin_lock_irqsave(&sdev->attr_lock, flags);
	p = sdev->attr;
	spin_unlock_irqrestore(&sdev->attr_lock, flags);
	p.state = IB_PORT_DOWN;
	p.phys_state = IB_PORT_PHYS_STATE_POLLING;
	simhca_port_update(sdev, &p, 0);
}

int simhca_query_port(struct ib_device *ibdev, u32 port,
		      struct ib_port_attr *attr)
{
	struct simhca_dev *sdev = to_sdev(ibdev);
	unsigned long flags;
	struct simhca_port a;
	u32 local;

	spin_lock_irqsave(&sdev->attr_lock, flags);
	a = sdev->attr;
	local = sdev->local_cap_mask;
	spin_unlock_irqrestore(&sdev->attr_lock, flags);

	attr->subnet_prefix = be64_to_cpu(a.subnet_prefix);
	attr->state = a.state;
	attr->max_mtu = a.max_mtu;
	attr->active_mtu = a.active_mtu;
	attr->phys_mtu = ib_mtu_enum_to_int(a.max_mtu);
	attr->gid_tbl_len = 1;
	attr->port_cap_flags = a.cap_mask | local;
	attr->max_msg_sz = 0x80000000;
	attr->pkey_tbl_len = SIMHCA_PKEY_TBL_LEN;
	attr->sm_lid = a.sm_lid;
	attr->lid = a.lid;
	attr->lmc = a.lmc;
	attr->max_vl_num = a.max_vl_num;
	attr->sm_sl = a.sm_sl;
	attr->subnet_timeout = a.subnet_timeout;
	attr->init_type_reply = a.init_type_reply;
	attr->active_width = a.active_width;
	attr->active_speed = a.active_speed;
	attr->phys_state = a.phys_state;
	return 0;
}

/* IsSM and friends: ib_umad's issm device and ib_cm set bits here */
int simhca_modify_port(struct ib_device *ibdev, u32 port, int mask,
		       struct ib_port_modify *props)
{
	struct simhca_dev *sdev = to_sdev(ibdev);
	struct simhca_msg msg = { .type = SIMHCA_MSG_CAPMASK };
	unsigned long flags;
	u32 old, new;

	if (mask & ~(IB_PORT_SHUTDOWN | IB_PORT_INIT_TYPE |
		     IB_PORT_RESET_QKEY_CNTR))
		return -EOPNOTSUPP;

	spin_lock_irqsave(&sdev->attr_lock, flags);
	old = sdev->local_cap_mask;
	new = (old | props->set_port_cap_mask) & ~props->clr_port_cap_mask;
	sdev->local_cap_mask = new;
	spin_unlock_irqrestore(&sdev->attr_lock, flags);

	if (new != old) {
		msg.capmask.local_cap_mask = new;
		simhca_relay_queue(sdev, &msg);
	}
	return 0;
}

int simhca_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	struct simhca_dev *sdev = to_sdev(ibdev);
	unsigned long flags;

	if (index >= SIMHCA_PKEY_TBL_LEN)
		return -EINVAL;
	spin_lock_irqsave(&sdev->attr_lock, flags);
	*pkey = sdev->attr.pkeys[index];
	spin_unlock_irqrestore(&sdev->attr_lock, flags);
	return 0;
}

int simhca_query_gid(struct ib_device *ibdev, u32 port, int index,
		     union ib_gid *gid)
{
	struct simhca_dev *sdev = to_sdev(ibdev);
	unsigned long flags;

	if (index != 0)
		return -EINVAL;
	spin_lock_irqsave(&sdev->attr_lock, flags);
	gid->global.subnet_prefix = sdev->attr.subnet_prefix;
	gid->global.interface_id = sdev->attr.port_guid;
	spin_unlock_irqrestore(&sdev->attr_lock, flags);
	return 0;
}
